"""A schema-only Terraform provider: the real schema, no calls to anyone.

Terraform starts it as a plugin (``dev_overrides`` point at a launcher, see
``workdir.py``); it serves the schema ``schema.py`` wrote over the plugin protocol
(version 6) with the ``tf`` package's generated gRPC stubs, msgpack values and
go-plugin handshake. Terraform itself then checks every argument name, type, required
argument, block count and reference against that schema in ``validate`` and ``plan``.

Its answers, and why:
- validate: nothing beyond Terraform's own checks (the real provider's value checks,
  such as an enum's allowed strings, are not in the schema);
- plan of a new resource: the configuration, with every computed attribute left unset
  (at any depth) planned as unknown, as the real provider plans it;
- plan of an existing resource: the proposed state unchanged; read: the state unchanged;
- a data source: the configuration, with computed attributes as known placeholders
  (``offline:<name>``, 0, false, empty), since Terraform refuses a data source that
  is not wholly known;
- apply and import: refused. It never opens a connection of its own.

    python -m niah_devtools.tfoffline.provider SCHEMA.json
    python -m niah_devtools.tfoffline.provider --shared SOCKET SCHEMA.json

The second form serves one provider to many terraform commands (``workdir.py``): each
attaches to it through ``TF_REATTACH_PROVIDERS``, Terraform's own way to reach a
provider it did not start, instead of starting one of its own per command.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from tf.gen import grpc_controller_pb2 as controller_pb
from tf.gen import grpc_controller_pb2_grpc as controller_rpc
from tf.gen import grpc_stdio_pb2_grpc as stdio_rpc
from tf.gen import tfplugin_pb2 as pb
from tf.gen import tfplugin_pb2_grpc as rpc
from tf.runner import _self_signed_cert
from tf.types import Unknown
from tf.utils import read_dynamic_value, to_dynamic_value

NESTING = {
    "list": pb.Schema.NestedBlock.NestingMode.LIST,
    "set": pb.Schema.NestedBlock.NestingMode.SET,
    "single": pb.Schema.NestedBlock.NestingMode.SINGLE,
}


def block_pb(block: dict[str, Any]) -> pb.Schema.Block:
    """A schema block of ``terraform providers schema -json`` as the protocol's message."""
    return pb.Schema.Block(
        attributes=[
            pb.Schema.Attribute(
                name=name,
                type=json.dumps(attribute["type"]).encode(),
                required=attribute.get("required", False),
                optional=attribute.get("optional", False),
                computed=attribute.get("computed", False),
            )
            for name, attribute in sorted(block.get("attributes", {}).items())
        ],
        block_types=[
            pb.Schema.NestedBlock(
                type_name=name,
                block=block_pb(nested["block"]),
                nesting=NESTING[nested["nesting_mode"]],
                min_items=nested.get("min_items", 0),
                max_items=nested.get("max_items", 0),
            )
            for name, nested in sorted(block.get("block_types", {}).items())
        ],
    )


MODES = {mode: name for name, mode in NESTING.items()}


def block_dict(block: pb.Schema.Block) -> dict[str, Any]:
    """A protocol schema block back as ``block_pb``'s input, with what planning reads."""
    return {
        "attributes": {
            a.name: {"type": json.loads(a.type), "computed": a.computed} for a in block.attributes
        },
        "block_types": {
            b.type_name: {"nesting_mode": MODES[b.nesting], "block": block_dict(b.block)}
            for b in block.block_types
        },
    }


def schema_response(schema_path: Path) -> pb.GetProviderSchema.Response:
    """The schema as the protocol's message, kept beside the JSON once built.

    Terraform starts each provider several times a command and the tests run dozens of
    commands; building the message from the JSON took about a second of CPU a start
    (google's 4.4 MB), parsing the kept one takes 0.02 s. The kept file's name holds a
    hash of the JSON and of this module, so a new schema or a new builder makes a new one.
    """
    schema_bytes = schema_path.read_bytes()
    key = hashlib.sha256(schema_bytes + Path(__file__).read_bytes()).hexdigest()[:16]
    kept = schema_path.with_name(f"{schema_path.stem}.{key}.pb")
    try:
        return pb.GetProviderSchema.Response.FromString(kept.read_bytes())
    except OSError:
        pass
    (schemas,) = json.loads(schema_bytes)["provider_schemas"].values()
    response = pb.GetProviderSchema.Response(
        provider=pb.Schema(block=block_pb(schemas["provider"]["block"])),
        provider_meta=pb.Schema(block=pb.Schema.Block()),
        resource_schemas={
            name: pb.Schema(version=entry["version"], block=block_pb(entry["block"]))
            for name, entry in schemas["resource_schemas"].items()
        },
        data_source_schemas={
            name: pb.Schema(version=entry["version"], block=block_pb(entry["block"]))
            for name, entry in schemas["data_source_schemas"].items()
        },
        server_capabilities=pb.ServerCapabilities(plan_destroy=True),
    )
    partial = kept.with_name(f"{kept.name}.{os.getpid()}")
    try:
        partial.write_bytes(response.SerializeToString())
        partial.replace(kept)  # whole or absent, whichever start writes it
    except OSError:
        pass  # a read-only schemas folder: build it every start, as before
    return response


def plan_new(block: dict[str, Any], value: Any) -> Any:
    """A new object's planned value: unset computed attributes become unknown, at any depth."""
    if value is None or value is Unknown:
        return value
    planned = dict(value)
    for name, attribute in block.get("attributes", {}).items():
        if planned.get(name) is None and attribute.get("computed"):
            planned[name] = Unknown
    for name, nested in block.get("block_types", {}).items():
        inner = planned.get(name)
        if nested["nesting_mode"] == "single":
            planned[name] = plan_new(nested["block"], inner)
        elif isinstance(inner, list):
            planned[name] = [plan_new(nested["block"], item) for item in inner]
    return planned


def placeholder(kind: Any, name: str) -> Any:
    """A known stand-in of a type, for a data source's computed attribute."""
    if kind == "string":
        return f"offline:{name}"
    if kind == "number":
        return 0
    if kind == "bool":
        return False
    if isinstance(kind, list) and kind[0] in ("list", "set"):
        return []
    if isinstance(kind, list) and kind[0] in ("map", "object"):
        return {} if kind[0] == "map" else {k: placeholder(v, k) for k, v in kind[1].items()}
    raise ValueError(f"no placeholder for type {kind!r}")


def read_placeholders(block: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    """A data source's result: its configuration, computed attributes filled with stand-ins."""
    read = dict(value)
    for name, attribute in block.get("attributes", {}).items():
        if read.get(name) is None and attribute.get("computed"):
            read[name] = placeholder(attribute["type"], name)
    for name, nested in block.get("block_types", {}).items():
        inner = read.get(name)
        if nested["nesting_mode"] == "single" and isinstance(inner, dict):
            read[name] = read_placeholders(nested["block"], inner)
        elif isinstance(inner, list):
            read[name] = [read_placeholders(nested["block"], item) for item in inner]
    return read


def error(summary: str, detail: str = "") -> list[pb.Diagnostic]:
    """One error diagnostic, as every response carries them."""
    return [pb.Diagnostic(severity=pb.Diagnostic.ERROR, summary=summary, detail=detail)]


class SchemaOnlyProvider(rpc.ProviderServicer):
    """The protocol's provider service, answered from a schema alone."""

    def __init__(self, schema: pb.GetProviderSchema.Response, provider: str) -> None:
        self.schema = schema
        self.provider = provider  # its registry address, for messages

    def _block(self, kind: str, type_name: str) -> dict[str, Any]:
        schemas = getattr(self.schema, kind)
        return block_dict(schemas[type_name].block)

    def GetMetadata(self, request: Any, context: Any) -> pb.GetMetadata.Response:  # noqa: D102
        return pb.GetMetadata.Response(
            server_capabilities=pb.ServerCapabilities(plan_destroy=True),
            resources=[
                pb.GetMetadata.ResourceMetadata(type_name=name)
                for name in self.schema.resource_schemas
            ],
            data_sources=[
                pb.GetMetadata.DataSourceMetadata(type_name=name)
                for name in self.schema.data_source_schemas
            ],
        )

    def GetProviderSchema(self, request: Any, context: Any) -> pb.GetProviderSchema.Response:  # noqa: D102
        return self.schema

    def ValidateProviderConfig(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.ValidateProviderConfig.Response()

    def ValidateResourceConfig(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.ValidateResourceConfig.Response()

    def ValidateDataResourceConfig(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.ValidateDataResourceConfig.Response()

    def ConfigureProvider(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.ConfigureProvider.Response()

    def UpgradeResourceState(self, request: Any, context: Any) -> Any:  # noqa: D102
        state = json.loads(request.raw_state.json) if request.raw_state.json else None
        return pb.UpgradeResourceState.Response(upgraded_state=to_dynamic_value(state))

    def ReadResource(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.ReadResource.Response(new_state=request.current_state, private=request.private)

    def PlanResourceChange(self, request: Any, context: Any) -> Any:  # noqa: D102
        prior = read_dynamic_value(request.prior_state)
        if prior is not None:  # an update or a delete: nothing of its own to add
            return pb.PlanResourceChange.Response(planned_state=request.proposed_new_state)
        proposed = read_dynamic_value(request.proposed_new_state)
        planned = plan_new(self._block("resource_schemas", request.type_name), proposed)
        return pb.PlanResourceChange.Response(planned_state=to_dynamic_value(planned))

    def ReadDataSource(self, request: Any, context: Any) -> Any:  # noqa: D102
        config = read_dynamic_value(request.config)
        block = self._block("data_source_schemas", request.type_name)
        return pb.ReadDataSource.Response(state=to_dynamic_value(read_placeholders(block, config)))

    def ApplyResourceChange(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.ApplyResourceChange.Response(
            diagnostics=error(
                "A schema-only provider cannot apply",
                f"This is the offline check's stand-in for {self.provider}: "
                "it plans, and never calls Google. Run terraform without the dev_overrides "
                "CLI configuration to apply.",
            )
        )

    def ImportResourceState(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.ImportResourceState.Response(
            diagnostics=error("A schema-only provider cannot import")
        )

    def GetFunctions(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.GetFunctions.Response()

    def StopProvider(self, request: Any, context: Any) -> Any:  # noqa: D102
        return pb.StopProvider.Response()


class Controller(controller_rpc.GRPCControllerServicer):
    """go-plugin's controller: Terraform's Shutdown ends the process."""

    def __init__(self) -> None:
        self.server: grpc.Server | None = None

    def Shutdown(self, request: Any, context: Any) -> Any:  # noqa: D102
        if self.server is not None:
            self.server.stop(grace=0.2)
        return controller_pb.Empty()


def serve(schema_path: Path, socket: Path, *, shared: bool = False) -> None:
    """Serve on ``socket`` until Terraform shuts the plugin down (or, ``shared``, until stopped).

    The go-plugin handshake line (core protocol 1, plugin protocol 6, a Unix socket,
    gRPC, the server's certificate) goes to stdout; Terraform connects with TLS.
    ``shared``: serve on that socket without TLS, as go-plugin's reattach expects (the
    socket's folder is the caller's, open to nobody else), and say so on stdout; no
    command shuts it down: it ends when its caller closes its stdin, or dies.
    """
    # The schemas' folder names each by its provider type (workdir.py's launchers).
    provider = SchemaOnlyProvider(
        schema_response(schema_path), f"registry.terraform.io/hashicorp/{schema_path.stem}"
    )
    controller = Controller()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[("grpc.max_send_message_length", 256 << 20)],
    )
    controller.server = server
    rpc.add_ProviderServicer_to_server(provider, server)
    controller_rpc.add_GRPCControllerServicer_to_server(controller, server)
    stdio_rpc.add_GRPCStdioServicer_to_server(stdio_rpc.GRPCStdioServicer(), server)
    if shared:
        server.add_insecure_port(f"unix://{socket}")
        server.start()
        print(f"1|6|unix|{socket}|grpc|", flush=True)
        # The caller holds the other end of stdin: end of file is its close() or its death.
        threading.Thread(target=lambda: (sys.stdin.read(), server.stop(0)), daemon=True).start()
        server.wait_for_termination()
        return
    certificate, credentials = _self_signed_cert()
    server.add_secure_port(f"unix://{socket}", credentials)
    server.start()
    encoded = base64.b64encode(certificate).decode().rstrip("=")
    print(f"1|6|unix|{socket}|grpc|{encoded}", flush=True)
    server.wait_for_termination()


def main(argv: list[str] | None = None) -> int:
    """Command line: ``[--shared SOCKET] SCHEMA.json`` (Terraform runs the launcher's form)."""
    import tempfile

    args = argv if argv is not None else sys.argv[1:]
    if args[0] == "--shared":
        serve(Path(args[2]), Path(args[1]), shared=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="tf-schema-only-") as socket_dir:
        serve(Path(args[0]), Path(socket_dir) / "provider.sock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
