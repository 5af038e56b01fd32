"""Other machines: inventories, running on their hosts through ssh, batch systems (Slurm), testbeds."""
