"""`python -m riccati_tf.reachability.lie --table [--out PATH]`: the accessibility table."""

from .table import main

__all__: list[str] = []

if __name__ == "__main__":
    raise SystemExit(main())
