"""One run: the runner, job placement, the scheduler variants it hosts, workloads and their inputs."""
