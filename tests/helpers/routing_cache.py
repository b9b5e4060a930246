"""One compiled URL builder per route for the whole test process, not one per app.

The suite builds an app for nearly every test (~2,000 a pass), and each app's URL
map compiles a builder function for each of its ~150 rules: werkzeug writes it as
an AST and runs ``compile()`` on it, 40 of the ~70 ms of ``create_app``. A rule
without defaults gets the same code every time: it depends only on the rule's parsed
parts (``Rule._trace``, its text) and whether unknown arguments go to the query
string, and it is bound to the rule it serves (``__get__``) as before. So the code
is compiled once and shared; each app still builds, binds and matches its own map.

``Rule._compile_builder`` is werkzeug's private method (3.x): if it is not there as
expected, nothing is changed and the apps compile their own, only slower.
"""

from __future__ import annotations

from collections.abc import Callable

from werkzeug.routing import rules

_builders: dict[tuple, Callable] = {}


def share_url_builders() -> None:
    compile_builder = getattr(rules.Rule, "_compile_builder", None)
    if compile_builder is None or getattr(compile_builder, "shared", False):
        return

    def shared(self: rules.Rule, append_unknown: bool = True) -> Callable:
        if self.defaults:
            # Defaults are folded into the code through the converters: compiled as werkzeug does.
            return compile_builder(self, append_unknown)
        key = (self.rule, tuple(self._trace), append_unknown)
        builder = _builders.get(key)
        if builder is None:
            builder = _builders[key] = compile_builder(self, append_unknown)
        return builder

    shared.shared = True
    rules.Rule._compile_builder = shared
