"""Run the real terraform on a configuration, offline, against schema-only providers.

``scripts/setup.sh`` makes ``.venv-terraform`` (the ``tf`` package) and writes the
providers' schemas to ``.venv-terraform/schemas/<type>.json``. Here each provider gets a
launcher named as Terraform expects (``terraform-provider-google``) that runs
``provider.py`` with its schema, and a CLI configuration whose ``dev_overrides`` point
``hashicorp/<type>`` at it; Terraform then never asks the registry for them.

    python -m niah_devtools.tfoffline.workdir plan infra VARS.json   # prints the plan
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
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
            launcher.write_text(
                "#!/bin/sh\n"
                f"PYTHONPATH={shlex.quote(str(REPO / 'devtools'))} exec "
                f"{shlex.quote(str(python))} -m niah_devtools.tfoffline.provider "
                f"{shlex.quote(str(schema))}\n"
            )
            launcher.chmod(0o755)
            overrides.append(f'    "hashicorp/{kind}" = {json.dumps(str(folder))}')
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

    def run(
        self, directory: Path, *args: str, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """``terraform -chdir=DIRECTORY ARGS...``, its output captured, never raising.

        Isolated, the only network it has is a loopback that is down: the providers speak
        to terraform over a Unix socket, and anything else (the registry, Google) fails.
        """
        return subprocess.run(
            [*self.prefix, self.terraform, f"-chdir={directory}", *args, "-no-color"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
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
            _, outputs = OfflineTerraform(Path(tmp)).plan(work, Path(args[2]).resolve())
        except subprocess.CalledProcessError as failed:
            print(failed.stdout + failed.stderr, file=sys.stderr)
            return 1
        print(outputs[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
