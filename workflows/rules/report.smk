# One HTML report over every experiment of the config.


rule make_report:
    input:
        section_files(),
    output:
        REPORT,
    params:
        title=config["report"]["title"],
    log:
        f"{RESULTS}/logs/make_report.log",
    shell:
        "{PY} -m analysis.report --sections {input} --out {output} --title '{params.title}' > {log} 2>&1"
