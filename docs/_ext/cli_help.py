"""`.. cli-help::` — the CLI reference, generated from `riccati_tf.app.cli.build_parser()`.

Renders the top-level help and each subcommand's `format_help()` verbatim (one section per
subcommand), so the page cannot drift from the parser.
"""

import argparse
import os
from unittest import mock

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: terminal width argparse formats the help for
COLUMNS = "100"


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """{name: parser} of the parser's subcommands, in the order they were added."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def help_text(parser: argparse.ArgumentParser) -> str:
    with mock.patch.dict(os.environ, {"COLUMNS": COLUMNS}):
        return parser.format_help()


class CliHelp(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        from riccati_tf.app.cli import build_parser

        parser = build_parser()
        lines = [".. code-block:: text", ""]
        lines += ["   " + ln for ln in help_text(parser).splitlines()]
        lines.append("")
        for name, sub in subcommands(parser).items():
            title = f"riccati-tf {name}"
            lines += [title, "-" * len(title), "", ".. code-block:: text", ""]
            lines += ["   " + ln for ln in help_text(sub).splitlines()]
            lines.append("")
        container = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, "cli-help"), container)
        return container.children


def setup(app):
    app.add_directive("cli-help", CliHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
