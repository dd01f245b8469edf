"""Triton language extensions of the CPU backend: `libdevice` (mapped from
`triton.language.extra.libdevice` by `CPUBackend.get_module_map`)."""
