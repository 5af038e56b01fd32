"""What a run leaves: its metadata, campaigns of runs, citable archives."""
