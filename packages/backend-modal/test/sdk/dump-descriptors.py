#!/usr/bin/env python3
"""Writes sdk-descriptors.json: the protobuf descriptors that the pinned Modal Python SDK
(requirements-sdk.lock.txt) ships, for the messages and enums berth and its simulator need.

Why a snapshot: the simulator's codec (../sim/codec.ts) reads these descriptors besides berth's own
fields.json, so it can serve what only the SDK sends (V2 sandboxes, EnvironmentMetadata, ...), and a
test can compare berth's fields.json with the SDK's view field by field. CI regenerates the file
with the pinned SDK and checks that it did not change, so the snapshot is really that SDK's.

Roots: every name in berth's fields.json, the request and response of every RPC in RPCS (what the
simulator serves and the SDK scenario calls), and EXTRA; then everything they reference.

Shape:
  sdk:      {modal, protobuf, files}
  messages: {"<Name>": {package, full_name, fields: {"<field>": {number, type, label, type_name?,
             proto3_optional?, oneof?, map?, fields_json_type, fields_json_label?}}}}
  enums:    {"<Name>": {package, full_name, values: {NAME: number}}}
  services: {"<pkg.Service>": {"<Rpc>": {input, output, server_streaming, client_streaming}}}
            (only RPCs whose input and output are both in `messages`)
Names follow fields.json: relative to the package, nested types as Outer.Inner; types of another
package (google.protobuf.Empty) keep their package. fields_json_type / fields_json_label are the
same facts in fields.json's notation (maps as map<k,v> without a label; `optional` only for
proto3 `optional`).

Usage: python dump-descriptors.py [--check]   (--check: exit 1 if the committed file differs)
"""

import argparse
import json
import os
import sys

import google.protobuf
from google.protobuf import descriptor_pb2
from modal_proto import api_pb2, task_command_router_pb2
from modal_version import __version__ as MODAL_VERSION

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS_JSON = os.path.join(HERE, "..", "..", "src", "wire", "fields.json")
OUT = os.path.join(HERE, "sdk-descriptors.json")

CLIENT = "modal.client.ModalClient"
ROUTER = "modal.task_command_router.TaskCommandRouter"
# Served by the simulator (berth's V1 path and the SDK's default V2 path) or called by the scenario.
RPCS = {
    CLIENT: [
        "AppGetOrCreate", "AuthTokenGet", "ClientHello", "EnvironmentGetOrCreate",
        "SecretGetOrCreate", "SecretGetInfo",
        "MountPutFile", "MountGetOrCreate", "ImageGetOrCreate", "ImageJoinStreaming",
        "SandboxCreate", "SandboxGetTaskId", "SandboxWait", "SandboxTerminate", "SandboxList",
        "SandboxTagsSet", "SandboxTagsGet", "TaskGetCommandRouterAccess",
        "SandboxCreateV2", "SandboxGetTaskIdV2", "SandboxGetCommandRouterAccess", "SandboxWaitV2",
        "SandboxTerminateV2", "SandboxListV2", "SandboxTagsSetV2", "SandboxTagsGetV2",
        "ImageDelete",
    ],
    ROUTER: [
        "TaskExecStart", "TaskExecStdioRead", "TaskExecStdinWrite", "TaskExecWait", "TaskExecPoll",
        "TaskSetNetworkAccess", "SandboxStdioReadV2", "SandboxStdinWriteV2", "TaskSnapshotFilesystem",
    ],
}
# Not an RPC's message, but on the wire: error details, client identity, warnings.
EXTRA = ["RPCStatus", "RPCRetryPolicy", "ClientType", "Warning"]

SCALAR = {getattr(descriptor_pb2.FieldDescriptorProto, f"TYPE_{t.upper()}"): t for t in [
    "double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool", "string", "group",
    "message", "bytes", "uint32", "enum", "sfixed32", "sfixed64", "sint32", "sint64"]}
LABEL = {1: "optional", 2: "required", 3: "repeated"}
OWN_PACKAGES = ("modal.client", "modal.task_command_router")


def file_protos():
    """Modal's two files and every file they import (google/protobuf/empty.proto, timestamp.proto, ...)."""
    out, seen = [], set()
    todo = [api_pb2.DESCRIPTOR, task_command_router_pb2.DESCRIPTOR]
    while todo:
        fd = todo.pop(0)
        if fd.name in seen:
            continue
        seen.add(fd.name)
        fdp = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(fdp)
        out.append(fdp)
        todo += list(fd.dependencies)
    return out


def index(fdps):
    """'.pkg.Outer.Inner' -> (kind, proto, package, relative name); and every service's RPCs."""
    idx, services = {}, {}

    def walk(m, pkg, prefix):
        rel = f"{prefix}{m.name}"
        idx[f".{pkg}.{rel}"] = ("message", m, pkg, rel)
        for e in m.enum_type:
            idx[f".{pkg}.{rel}.{e.name}"] = ("enum", e, pkg, f"{rel}.{e.name}")
        for n in m.nested_type:
            walk(n, pkg, f"{rel}.")

    for fdp in fdps:
        for m in fdp.message_type:
            walk(m, fdp.package, "")
        for e in fdp.enum_type:
            idx[f".{fdp.package}.{e.name}"] = ("enum", e, fdp.package, e.name)
        for s in fdp.service:
            services[f"{fdp.package}.{s.name}"] = {
                m.name: {"input": m.input_type, "output": m.output_type,
                         "server_streaming": bool(m.server_streaming), "client_streaming": bool(m.client_streaming)}
                for m in s.method
            }
    return idx, services


def key_of(pkg, rel):
    return rel if pkg in OWN_PACKAGES else f"{pkg}.{rel}"


def fields_json_type(idx, field, own_pkg):
    if field.type not in (field.TYPE_MESSAGE, field.TYPE_ENUM):
        return SCALAR[field.type]
    kind, proto, pkg, rel = idx[field.type_name]
    if kind == "message" and proto.options.map_entry:
        k, v = proto.field[0], proto.field[1]
        return f"map<{fields_json_type(idx, k, own_pkg)},{fields_json_type(idx, v, own_pkg)}>"
    return rel if pkg == own_pkg else field.type_name.lstrip(".")


def dump_message(idx, proto, pkg, rel):
    fields = {}
    for f in proto.field:
        d = {"number": f.number, "type": SCALAR[f.type], "label": LABEL[f.label]}
        if f.type_name:
            d["type_name"] = f.type_name
        if f.proto3_optional:
            d["proto3_optional"] = True
        if f.HasField("oneof_index") and not f.proto3_optional:
            d["oneof"] = proto.oneof_decl[f.oneof_index].name
        entry = idx.get(f.type_name) if f.type == f.TYPE_MESSAGE else None
        if entry and entry[1].options.map_entry:
            d["map"] = [fields_json_type(idx, entry[1].field[0], pkg), fields_json_type(idx, entry[1].field[1], pkg)]
        d["fields_json_type"] = fields_json_type(idx, f, pkg)
        if "map" not in d and f.label == 3:
            d["fields_json_label"] = "repeated"
        elif f.proto3_optional:
            d["fields_json_label"] = "optional"
        fields[f.name] = d
    return {"package": pkg, "full_name": f"{pkg}.{rel}", "fields": fields}


def resolve(idx, name, pkg=None):
    for p in ([pkg] if pkg else []) + [*OWN_PACKAGES, "google.protobuf"]:
        if f".{p}.{name}" in idx:
            return f".{p}.{name}"
    return None


def build():
    idx, services = index(file_protos())
    roots, missing = [], []
    with open(FIELDS_JSON) as f:
        names = [(k, v.get("package")) for k, v in json.load(f).items()]
    names += [(n, None) for n in EXTRA]
    for n, pkg in names:
        full = resolve(idx, n, pkg)
        (roots if full else missing).append(full or n)
    for svc, rpcs in RPCS.items():
        for rpc in rpcs:
            m = services[svc].get(rpc)
            if m is None:
                missing.append(f"{svc}/{rpc}")
                continue
            roots += [m["input"], m["output"]]
    if missing:
        sys.exit(f"not in the SDK's descriptors: {missing}")

    seen, todo = set(), list(roots)
    while todo:
        full = todo.pop()
        if full in seen:
            continue
        seen.add(full)
        kind, proto, _, _ = idx[full]
        if kind == "message":
            todo += [f.type_name for f in proto.field if f.type_name]

    messages, enums = {}, {}
    for full in sorted(seen):
        kind, proto, pkg, rel = idx[full]
        key = key_of(pkg, rel)
        if key in messages or key in enums:  # fields.json's notation could not tell them apart
            sys.exit(f"{key} is defined in two packages")
        if kind == "message" and not proto.options.map_entry:
            messages[key] = dump_message(idx, proto, pkg, rel)
        elif kind == "enum":
            enums[key] = {"package": pkg, "full_name": f"{pkg}.{rel}",
                                       "values": {v.name: v.number for v in proto.value}}
    full_names = {m["full_name"] for m in messages.values()}
    out_services = {}
    for svc, rpcs in services.items():
        kept = {name: {**m, "input": m["input"].lstrip("."), "output": m["output"].lstrip(".")}
                for name, m in rpcs.items()
                if m["input"].lstrip(".") in full_names and m["output"].lstrip(".") in full_names}
        if kept:
            out_services[svc] = dict(sorted(kept.items()))
    return {
        "sdk": {"modal": MODAL_VERSION, "protobuf": google.protobuf.__version__,
                "files": ["modal_proto/api.proto", "modal_proto/task_command_router.proto"]},
        "messages": messages,
        "enums": enums,
        "services": out_services,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    args = ap.parse_args()
    text = json.dumps(build(), indent=1) + "\n"
    if args.check:
        with open(OUT) as f:
            same = f.read() == text
        print("sdk-descriptors.json is up to date" if same else
              "sdk-descriptors.json differs from the installed SDK's descriptors: run dump-descriptors.py", file=sys.stderr)
        sys.exit(0 if same else 1)
    with open(OUT, "w") as f:
        f.write(text)
    d = json.loads(text)
    print(f"wrote {OUT}: {len(d['messages'])} messages, {len(d['enums'])} enums, modal {MODAL_VERSION}", file=sys.stderr)


if __name__ == "__main__":
    main()
