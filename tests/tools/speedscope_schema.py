# SPDX-License-Identifier: MIT
# Checks a speedscope file against speedscope's bundled JSON schema (file-format-schema.json),
# with the draft-07 subset that schema uses: $ref, anyOf, type, const, enum, required,
# properties, items. Exits 1 with the first mismatch.
# Usage: speedscope_schema.py SCHEMA FILE
import json
import sys

TYPES = {"object": dict, "array": list, "string": str, "number": (int, float)}


def check(schema, v, s, where):
    if "$ref" in s:
        return check(schema, v, schema["definitions"][s["$ref"].split("/")[-1]], where)
    if "anyOf" in s:
        errs = []
        for alt in s["anyOf"]:
            try:
                return check(schema, v, alt, where)
            except AssertionError as e:
                errs.append(str(e))
        raise AssertionError("%s matches no alternative: %s" % (where, errs))
    if "type" in s:
        assert isinstance(v, TYPES[s["type"]]) and not isinstance(v, bool), (where, "not a", s["type"])
    if "const" in s:
        assert v == s["const"], (where, v, "!=", s["const"])
    if "enum" in s:
        assert v in s["enum"], (where, v, "not in", s["enum"])
    for k in s.get("required", []):
        assert k in v, (where, "lacks", k)
    for k, sub in s.get("properties", {}).items():
        if k in v:
            check(schema, v[k], sub, where + "." + k)
    if "items" in s:
        for i, x in enumerate(v):
            check(schema, x, s["items"], "%s[%d]" % (where, i))


def main():
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    doc = json.load(open(sys.argv[2], encoding="utf-8"))
    try:
        check(schema, doc, schema["definitions"]["FileFormat.File"], "file")
    except AssertionError as e:
        sys.exit("%s does not match speedscope's schema: %s" % (sys.argv[2], e))


if __name__ == "__main__":
    main()
