# One HTML report over every experiment of the config.


rule make_report:
    input:
        section_files(),
    output:
        REPORT,
    log:
        f"{RESULTS}/logs/make_report.log",
    params:
        py=PY,
        title=config["report"]["title"],
    shell:
        "{params.py} -m analysis.report --sections {input} --out {output} --title '{params.title}' > {log} 2>&1"
