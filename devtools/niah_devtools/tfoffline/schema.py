"""A Terraform provider's schema, read from its prebuilt CDK Terrain bindings on PyPI.

``cdktn-provider-google``, ``-google-beta`` and ``-time`` are generated from the providers'
own schemas (``terraform providers schema -json``) and ship the generated JavaScript in
a jsii tarball. Every attribute's accessor there carries the schema's flags in a comment
(``// name - computed: true, optional: false, required: false``) and its type in the
accessor (``getNumberAttribute``, ``new XList(this, "name", wrapsSet)``); each block's
``...ToHclTerraform`` function says which of its arguments are nested blocks and how they
nest (``type: "list" | "set" | "struct"``). This module reads those back into the JSON
format of ``terraform providers schema -json``, which ``provider.py`` serves.

What the bindings do not carry is left out: descriptions, sensitivity, deprecations,
maximum block counts other than one, and the schema versions (state upgrades), none of
which ``validate`` or a plan from empty state needs.

    python -m niah_devtools.tfoffline.schema WHEEL... --out DIR
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# The comment cdktn writes above every attribute's accessor, with the schema's flags.
FIELD = re.compile(
    r"^ *// (\w+) - computed: (true|false), optional: (true|false), required: (true|false)\n",
    re.M,
)
CLASS = re.compile(r"^class (\w+) extends ([\w.]+) \{\n(.*?)^\}", re.M | re.S)
HCL_FUNCTION = re.compile(r"^function (\w+)ToHclTerraform\(struct\) \{\n(.*?)^\}", re.M | re.S)
HCL_ENTRY = re.compile(
    r'^ *"?(\w+)"?: \{\n *value: .*?\n *isBlock: (true|false),\n *type: "(\w+)",\n'
    r' *storageClassType: "(\w+)",',
    re.M,
)
# The provider's own type may hold a hyphen (google-beta).
RESOURCE_TYPE = re.compile(r'static tfResourceType = "([\w-]+)";')
GETTER = re.compile(r"return (cdktn\.Fn\.tolist\()?this\.get(\w+)Attribute\('")
CONSTRUCTED = re.compile(r'new (?:\w+\.)?(\w+)\(this, "\w+"(?:, (true|false))?\)')

PRIMITIVES = {"string": "string", "number": "number", "boolean": "bool"}
# An accessor of a computed-only attribute -> its type.
GETTER_TYPES: dict[str, Any] = {
    "String": "string",
    "Number": "number",
    "Boolean": "bool",
    "List": ["list", "string"],
    "NumberList": ["list", "number"],
    "BooleanList": ["list", "bool"],
    "StringMap": ["map", "string"],
    "NumberMap": ["map", "number"],
    "BooleanMap": ["map", "bool"],
    "AnyMap": ["map", "dynamic"],
}
MAPS = {
    "StringMap": ["map", "string"],
    "NumberMap": ["map", "number"],
    "BooleanMap": ["map", "bool"],
    "AnyMap": ["map", "dynamic"],
    "StringMapList": ["list", ["map", "string"]],
}
# What a root class extends -> where its schema goes.
ROOTS = {
    "cdktn.TerraformResource": "resource_schemas",
    "cdktn.TerraformDataSource": "data_source_schemas",
    "cdktn.TerraformProvider": "provider",
}
# Arguments of a provider block that are Terraform's, not the provider's.
PROVIDER_META = {"alias"}
# The prefix of the structs of the providers' own nested blocks (``batching``).
PROVIDER_STRUCTS = ("GoogleProvider", "GoogleBetaProvider", "TimeProvider")


class SchemaError(ValueError):
    """The bindings hold something this reader does not understand."""


@dataclass
class Field:
    """One attribute or block as its accessor describes it."""

    computed: bool
    optional: bool
    required: bool
    accessor: str  # the accessor's text, up to the next field's comment


@dataclass
class Module:
    """The classes and ``ToHclTerraform`` functions of one resource's generated module."""

    classes: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (base, body)
    arguments: dict[str, list[tuple[str, bool, str, str]]] = field(default_factory=dict)

    def add(self, source: str) -> None:
        """Read one JavaScript file of the module (its source map dropped)."""
        source = source.split("\n//# sourceMappingURL=")[0]
        for name, base, body in CLASS.findall(source):
            self.classes[name] = (base, body)
        for function, body in HCL_FUNCTION.findall(source):
            struct = function[0].upper() + function[1:]
            self.arguments[struct] = _hcl_entries(body)

    def fields(self, class_name: str) -> dict[str, Field]:
        """The attributes and blocks a class's accessors describe, by name.

        A provider's nested blocks have no accessor class: their arguments are then
        taken as optional.
        """
        if class_name not in self.classes:
            if class_name.startswith(PROVIDER_STRUCTS):
                return {}
            raise SchemaError(f"no class {class_name}")
        body = self.classes[class_name][1]
        found = list(FIELD.finditer(body))
        fields = {}
        for index, match in enumerate(found):
            end = found[index + 1].start() if index + 1 < len(found) else len(body)
            name, computed, optional, required = match.groups()
            fields[name] = Field(
                computed == "true", optional == "true", required == "true", body[match.end() : end]
            )
        return fields

    def block(self, struct: str, arguments: list[tuple[str, bool, str, str]] | None = None) -> dict:
        """The schema block of a struct (a nested block, or the root when given its arguments)."""
        fields = self.fields(struct if arguments is not None else f"{struct}OutputReference")
        given = {entry[0]: entry for entry in (arguments or self.arguments.get(struct, []))}
        attributes: dict[str, Any] = {}
        blocks: dict[str, Any] = {}
        for name in sorted(set(fields) | set(given)):
            flags = fields.get(name, Field(False, True, False, ""))
            if name in given and given[name][1]:
                blocks[name] = self._nested(given[name], flags)
                continue
            kind = _argument_type(given[name]) if name in given else self._computed_type(flags)
            attribute: dict[str, Any] = {"type": kind, "description_kind": "plain"}
            if flags.required:
                attribute["required"] = True
            elif flags.optional or not flags.computed:
                attribute["optional"] = True
            if flags.computed:
                attribute["computed"] = True
            attributes[name] = attribute
        block: dict[str, Any] = {"attributes": attributes, "description_kind": "plain"}
        if blocks:
            block["block_types"] = blocks
        return block

    def _nested(self, entry: tuple[str, bool, str, str], flags: Field) -> dict:
        """A nested block's schema: its nesting, counts and body."""
        _, _, kind, storage = entry
        struct = storage.removesuffix("List") if kind in ("list", "set") else storage
        nested: dict[str, Any] = {
            "nesting_mode": {"list": "list", "set": "set", "struct": "single"}[kind],
            "block": self.block(struct),
        }
        constructed = CONSTRUCTED.search(flags.accessor)
        single = constructed is not None and constructed.group(1).endswith("OutputReference")
        if kind in ("list", "set") and single:
            nested["max_items"] = 1
        if flags.required:
            nested["min_items"] = 1
        return nested

    def _computed_type(self, flags: Field) -> Any:
        """The type of a computed-only attribute, from its accessor."""
        getter = GETTER.search(flags.accessor)
        constructed = CONSTRUCTED.search(flags.accessor)
        if getter and (not constructed or getter.start() < constructed.start()):
            kind = GETTER_TYPES.get(getter.group(2))
            if kind is None:
                raise SchemaError(f"unknown accessor get{getter.group(2)}Attribute")
            if getter.group(1):  # cdktn.Fn.tolist(...) reads a set as a list
                return ["set", kind[1]]
            return kind
        if constructed is None:
            raise SchemaError(f"no type in accessor {flags.accessor[:120]!r}")
        name, wraps_set = constructed.groups()
        if name in MAPS:
            return MAPS[name]
        struct = name.removesuffix("OutputReference").removesuffix("List")
        inner = self.block(struct)
        members = {n: a["type"] for n, a in inner["attributes"].items()}
        for n, nested in inner.get("block_types", {}).items():
            members[n] = [
                "list",
                ["object", {k: v["type"] for k, v in nested["block"]["attributes"].items()}],
            ]
        # A computed-only nested object is a list (or set) of objects in the SDK's schemas.
        return ["set" if wraps_set == "true" else "list", ["object", members]]


def _hcl_entries(body: str) -> list[tuple[str, bool, str, str]]:
    """(name, is_block, type, storage class) of each argument a ToHclTerraform body lists."""
    return [
        (name, is_block == "true", kind, storage)
        for name, is_block, kind, storage in HCL_ENTRY.findall(body)
    ]


def _argument_type(entry: tuple[str, bool, str, str]) -> Any:
    """The type of an argument that is an attribute: a primitive or a collection of one."""
    name, _, kind, storage = entry
    if kind == "simple" and storage in PRIMITIVES:
        return PRIMITIVES[storage]
    collection = re.fullmatch(r"(string|number|boolean)(List|Map)", storage)
    if collection and kind in ("list", "set", "map"):
        return [kind, PRIMITIVES[collection.group(1)]]
    raise SchemaError(f"argument {name}: type {kind} of {storage} is not understood")


def read_tarball(tarball: IO[bytes]) -> tuple[dict[str, Any], dict[str, Module]]:
    """The package's ``package.json`` and its generated modules by folder name."""
    modules: dict[str, Module] = {}
    package: dict[str, Any] = {}
    with tarfile.open(fileobj=tarball) as archive:
        for member in archive:
            parts = member.name.split("/")
            if member.name == "package/package.json":
                package = json.load(_read(archive, member))
            elif len(parts) >= 4 and parts[1] == "lib" and member.name.endswith(".js"):
                source = _read(archive, member).read().decode()
                modules.setdefault(parts[2], Module()).add(source)
    return package, modules


def _read(archive: tarfile.TarFile, member: tarfile.TarInfo) -> IO[bytes]:
    handle = archive.extractfile(member)
    if handle is None:
        raise SchemaError(f"{member.name} is not a file")
    return handle


def provider_schema(tarball: IO[bytes]) -> dict[str, Any]:
    """``terraform providers schema -json`` for the provider the tarball was generated from.

    Also names where it came from: the provider's address and version as the package
    records them (``package.json``: ``cdktn.provider``), and the package's own version.
    """
    package, modules = read_tarball(tarball)
    generated_from = package["cdktn"]["provider"]
    schemas: dict[str, Any] = {"resource_schemas": {}, "data_source_schemas": {}}
    for folder, module in sorted(modules.items()):
        for class_name, (base, body) in module.classes.items():
            where = ROOTS.get(base)
            type_name = RESOURCE_TYPE.search(body)
            if where is None or type_name is None:
                continue
            arguments = _hcl_entries(body[body.index("synthesizeHclAttributes()") :])
            try:
                block = module.block(class_name, arguments)
            except SchemaError as error:
                raise SchemaError(f"{folder}: {error}") from error
            if where == "provider":
                for meta in PROVIDER_META:
                    block["attributes"].pop(meta, None)
                schemas["provider"] = {"version": 0, "block": block}
            else:
                schemas[where][type_name.group(1)] = {"version": 0, "block": block}
    return {
        "format_version": "1.0",
        "provider_schemas": {generated_from["name"]: schemas},
        "generated_from": {
            "provider": generated_from["name"],
            "version": generated_from["version"],
            "package": f"{package['name']} {package['version']}",
        },
    }


def wheel_tarball(wheel: Path) -> io.BytesIO:
    """The jsii tarball inside a bindings wheel (``cdktn_provider_google-...whl``)."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".jsii.tgz"):
                return io.BytesIO(archive.read(name))
    raise SchemaError(f"{wheel.name} holds no .jsii.tgz")


def write_schemas(wheels: list[Path], out: Path) -> list[Path]:
    """Each wheel's provider schema as ``OUT/<provider type>.json`` (``google.json``)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for wheel in wheels:
        schema = provider_schema(wheel_tarball(wheel))
        path = out / f"{schema['generated_from']['provider'].rsplit('/', 1)[-1]}.json"
        path.write_text(json.dumps(schema, sort_keys=True))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """Command line: write the provider schemas of bindings wheels as JSON."""
    parser = argparse.ArgumentParser(prog="python -m niah_devtools.tfoffline.schema")
    parser.add_argument("wheels", nargs="+", type=Path, help="cdktn-provider-* wheels")
    parser.add_argument("--out", type=Path, required=True, help="folder for <type>.json")
    args = parser.parse_args(argv)
    for path in write_schemas(args.wheels, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
