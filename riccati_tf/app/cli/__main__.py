"""`python -m riccati_tf.app.cli`: the `riccati-tf` command."""

from . import entry

__all__: list[str] = []

entry()
