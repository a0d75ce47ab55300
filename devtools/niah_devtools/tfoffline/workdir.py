"""Run the real terraform on a configuration, offline, against schema-only providers.

``scripts/setup.sh`` makes ``.venv-terraform`` (the ``tf`` package) and writes the
providers' schemas to ``.venv-terraform/schemas/<type>.json``. Here each provider gets a
launcher named as Terraform expects (``terraform-provider-google``) that runs
``provider.py`` with its schema, and a CLI configuration whose ``dev_overrides`` point
``hashicorp/<type>`` at it; Terraform then never asks the registry for them.

Terraform starts each provider afresh for each command that needs its schema (validate,
plan, show, graph; validate starts each twice), about half a CPU-second a start. So each
provider is started once per ``OfflineTerraform``, in the same isolation as terraform,
and every command but ``init`` attaches to it (``TF_REATTACH_PROVIDERS``, Terraform's
own way to reach a provider it did not start; the plan is the same, 2026-11-29).
``init`` does not attach: it still finds each provider in the mirror, and so still
checks versions.tf's constraints against the schemas' versions (an attached provider
skips that check).

    python -m niah_devtools.tfoffline.workdir plan infra VARS.json   # prints the plan
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import shutil
import subprocess
import sys
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
VENV = REPO / ".venv-terraform"
SCHEMAS = VENV / "schemas"


class NotSetUp(RuntimeError):
    """The offline toolchain is missing: scripts/setup.sh makes it."""


@dataclass
class OfflineTerraform:
    """A terraform binary and the CLI configuration that points it at the schema-only providers."""

    home: Path  # launchers, CLI configuration, plugin sockets
    terraform: str = "terraform"
    # Run terraform (and so the providers it starts) in a network namespace of its own
    # with no way out, so "offline" is a fact of each run, not a hope.
    isolated: bool = True
    # Each provider started once and shared by the commands (the module's docstring).
    shared_providers: bool = True
    _providers: list[subprocess.Popen[str]] = field(default_factory=list, init=False, repr=False)
    _reattach: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.prefix: tuple[str, ...] = ()
        if self.isolated:
            self.prefix = ("unshare", "--map-root-user", "--net")
            if subprocess.run([*self.prefix, "true"], capture_output=True).returncode != 0:
                raise NotSetUp(
                    "unshare cannot make a network namespace here (isolated=False runs without one)"
                )
        python = VENV / "bin" / "python"
        schemas = sorted(SCHEMAS.glob("*.json"))
        if not python.exists() or not schemas:
            raise NotSetUp(f"{VENV} or its schemas are missing: run scripts/setup.sh")
        if shutil.which(self.terraform) is None:
            raise NotSetUp(f"{self.terraform} is not on PATH")
        platform = json.loads(
            subprocess.run(
                [self.terraform, "version", "-json"], capture_output=True, text=True, check=True
            ).stdout
        )["platform"]
        overrides = []
        for schema in schemas:
            kind = schema.stem
            version = json.loads(schema.read_text())["generated_from"]["version"]
            # A filesystem mirror's unpacked layout, so `terraform init` finds this version
            # (and checks it against required_providers) without the registry.
            folder = self.home / "mirror" / "registry.terraform.io" / "hashicorp" / kind
            folder = folder / version / platform
            folder.mkdir(parents=True, exist_ok=True)
            launcher = folder / f"terraform-provider-{kind}_v{version}"
            # Each start by terraform itself leaves a line in launches.log: with the
            # providers shared, only a command that does not attach would (a test reads it).
            launcher.write_text(
                "#!/bin/sh\n"
                f"echo {kind} >> {shlex.quote(str(self.home / 'launches.log'))}\n"
                f"PYTHONPATH={shlex.quote(str(REPO / 'devtools'))} exec "
                f"{shlex.quote(str(python))} -m niah_devtools.tfoffline.provider "
                f"{shlex.quote(str(schema))}\n"
            )
            launcher.chmod(0o755)
            overrides.append(f'    "hashicorp/{kind}" = {json.dumps(str(folder))}')
        self._python, self._schemas = python, schemas
        # A test that forgets close() still leaves no provider running.
        weakref.finalize(self, _stop, self._providers)
        self.cli_config = self.home / "terraformrc"
        mirror = json.dumps(str(self.home / "mirror"))
        self.cli_config.write_text(
            "provider_installation {\n  dev_overrides {\n"
            + "\n".join(overrides)
            + f"\n  }}\n  filesystem_mirror {{\n    path = {mirror}\n  }}\n}}\n"
        )

    def env(self) -> dict[str, str]:
        """The environment terraform runs in: this CLI configuration, no checkpoint calls."""
        return {
            **os.environ,
            "TF_CLI_CONFIG_FILE": str(self.cli_config),
            "CHECKPOINT_DISABLE": "1",
            "TF_IN_AUTOMATION": "1",
            "TF_INPUT": "0",
            "NO_COLOR": "1",
        }

    def provider_pids(self) -> list[int]:
        """The shared providers' processes, started if they are not yet."""
        self._reattach_config()
        return [process.pid for process in self._providers]

    def _reattach_config(self) -> str:
        """``TF_REATTACH_PROVIDERS``: each shared provider's socket, started if need be."""
        if self._reattach is not None:
            return self._reattach
        config = {}
        sockets = self.home / "sockets"
        sockets.mkdir(mode=0o700, exist_ok=True)
        for schema in self._schemas:
            socket = sockets / f"{schema.stem}.sock"
            socket.unlink(missing_ok=True)  # one a stopped provider left
            with (self.home / f"provider-{schema.stem}.log").open("a") as log:
                process = subprocess.Popen(
                    [
                        *self.prefix,
                        str(self._python),
                        "-m",
                        "niah_devtools.tfoffline.provider",
                        "--shared",
                        str(socket),
                        str(schema),
                    ],
                    stdin=subprocess.PIPE,  # closed by close(), or by this process's death
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    env={**os.environ, "PYTHONPATH": str(REPO / "devtools")},
                )
            self._providers.append(process)
            if not _first_line(process, PROVIDER_START_SECONDS).startswith(f"1|6|unix|{socket}|"):
                self.close()
                raise NotSetUp(f"the {schema.stem} provider did not start: see {log.name}")
            config[f"registry.terraform.io/hashicorp/{schema.stem}"] = {
                "Protocol": "grpc",
                "ProtocolVersion": 6,
                "Pid": process.pid,
                # A test provider: Terraform neither checks on nor stops the process.
                "Test": True,
                "Addr": {"Network": "unix", "String": str(socket)},
            }
        self._reattach = json.dumps(config)
        return self._reattach

    def close(self) -> None:
        """Stop the shared providers (a later command starts them again)."""
        _stop(self._providers)
        self._reattach = None

    def __enter__(self) -> OfflineTerraform:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def run(
        self, directory: Path, *args: str, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """``terraform -chdir=DIRECTORY ARGS...``, its output captured, never raising.

        Isolated, the only network it has is a loopback that is down: the providers speak
        to terraform over a Unix socket, and anything else (the registry, Google) fails.
        """
        env = self.env()
        if self.shared_providers and args[:1] != ("init",):
            env["TF_REATTACH_PROVIDERS"] = self._reattach_config()
        return subprocess.run(
            [*self.prefix, self.terraform, f"-chdir={directory}", *args, "-no-color"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )

    def plan(self, directory: Path, var_file: Path) -> tuple[dict[str, Any], list[str]]:
        """init, validate, plan and show: the plan as JSON, and each step's output.

        Raises ``subprocess.CalledProcessError`` (with the output) on the first step that fails.
        """
        outputs = []
        for args in (
            ("init", "-input=false"),
            ("validate",),
            (
                "plan",
                "-input=false",
                "-refresh=false",
                f"-var-file={var_file}",
                "-out=offline.tfplan",
            ),
            ("show", "-json", "offline.tfplan"),
        ):
            done = self.run(directory, *args)
            outputs.append(done.stdout + done.stderr)
            if done.returncode != 0:
                raise subprocess.CalledProcessError(
                    done.returncode, ["terraform", *args], done.stdout, done.stderr
                )
        return json.loads(done.stdout), outputs


# How long a provider may take to say it serves (it takes under a second).
PROVIDER_START_SECONDS = 60.0


def _first_line(process: subprocess.Popen[str], seconds: float) -> str:
    """The process's first line of output, or "" if none comes within ``seconds``."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout=seconds):
            return ""
    return process.stdout.readline()


def _stop(processes: list[subprocess.Popen[str]]) -> None:
    """End the providers and forget them."""
    for process in processes:
        if process.stdin is not None:
            process.stdin.close()
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
    processes.clear()


def main(argv: list[str] | None = None) -> int:
    """Command line: ``plan INFRA_DIR VARS.json`` on a copy of the folder; prints the plan."""
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 3 or args[0] != "plan":
        print(
            "usage: python -m niah_devtools.tfoffline.workdir plan INFRA_DIR VARS.json",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="tfoffline-") as tmp:
        work = Path(tmp) / "infra"
        shutil.copytree(args[1], work, ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*"))
        try:
            with OfflineTerraform(Path(tmp)) as offline:
                _, outputs = offline.plan(work, Path(args[2]).resolve())
        except subprocess.CalledProcessError as failed:
            print(failed.stdout + failed.stderr, file=sys.stderr)
            return 1
        print(outputs[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
