"""The machine under test: CPU topology and CMPs, cgroups, the device and its elevator, the undo
journal of every change (state), and the host checks (doctor)."""
