"""Terraform offline: the real ``terraform validate`` and ``plan`` without the registry.

The Google provider cannot be downloaded on these machines, so ``terraform init`` could
never run here. Instead, a schema-only provider (``provider.py``) serves each provider's
real schema over Terraform's plugin protocol (with the ``tf`` package); the schema is
read from the prebuilt CDK Terrain bindings on PyPI (``schema.py``), which are generated
from the provider itself; and ``workdir.py`` points Terraform at it with a
``dev_overrides`` CLI configuration. Validation is Terraform's own; a plan never calls
Google (computed values are unknown, data sources give placeholders).

Set up by ``scripts/setup.sh`` into ``.venv-terraform`` (requirements-terraform.txt);
never shipped.
"""
