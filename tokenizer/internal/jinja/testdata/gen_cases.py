#!/usr/bin/env python3
"""Renders the templates of cases.py with Python jinja2 configured as transformers.apply_chat_template does and
writes jinja2_cases.jsonl, the reference for ../jinja2_cases_test.go.

    python3 gen_cases.py   # jinja2 3.1.x; writes jinja2_cases.jsonl next to this file

Each output line: {"name", "template", "vars", "output"} or {..., "error": "<exception class>"}.
strftime_now is pinned to 2024-07-26 10:30:05 so the output is reproducible.
"""
import json
import os
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime(2024, 7, 26, 10, 30, 5).strftime(format)

    class Generation(jinja2.ext.Extension):
        # transformers' AssistantTracker renders {% generation %} bodies unchanged.
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    env = make_env()
    from cases import CASES
    cases = [{"name": n, "template": t, "vars": v} for n, t, v in CASES]
    with open(os.path.join(HERE, "jinja2_cases.jsonl"), "w") as out:
        for c in cases:
            rec = {"name": c["name"], "template": c["template"], "vars": c.get("vars", {})}
            try:
                rec["output"] = env.from_string(c["template"]).render(**rec["vars"])
            except Exception as e:  # the Go side must fail too
                rec["error"] = type(e).__name__
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
