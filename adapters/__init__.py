"""The framework adapters (adapters/README.md): one package, each server a module started from
the repository root, e.g. `env PYTHONPATH=crates/cli/python python3 -m adapters.jax.jax_backend`
(backends.yaml names every command). Shared pieces are in adapters.common."""
