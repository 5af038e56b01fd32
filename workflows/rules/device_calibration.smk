# The report section "the device": a quick calibration of the emulated rotating disk against
# its preset (report.device in the config; docs/emulators/rotating_disk.md). Its checks pass or
# fail against their tolerance; an experiment whose runs use an emulated disk of that preset reads
# calibration.json and marks those runs failed when a check failed (analysis.rotating_disk).
import os

DEVICE_DIR = f"{RESULTS}/device"


rule calibrate_device:
    output:
        f"{DEVICE_DIR}/calibration.json",
    log:
        f"{DEVICE_DIR}/logs/calibrate_device.log",
    # first of all measuring jobs: the calibration vouches for the runs that follow it
    priority: 1000000
    resources:
        testbed=1,
    params:
        py=PY,
        preset=config["report"]["device"]["preset"],
    shell:
        # exit 1 with the JSON written: a check out of tolerance, which the section shows
        "{params.py} bench/rotating_disk_calibration.py --quick --preset {params.preset}"
        " --out {output} > {log} 2>&1 || test -s {output}"


rule analyze_device:
    input:
        f"{DEVICE_DIR}/calibration.json",
    output:
        f"{DEVICE_DIR}/analysis/section.json",
    log:
        f"{DEVICE_DIR}/logs/analyze_device.log",
    params:
        py=PY,
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m analysis.rotating_disk --calibration {input} --out-dir {params.out_dir} > {log} 2>&1"
