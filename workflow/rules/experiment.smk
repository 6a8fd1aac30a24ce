# experiment: the experiment record (everything that makes this result this result), written by
# a job, never while planning. Content-addressed by its id, so an existing one is never rewritten.


rule experiment_record:
    input:
        # the task test environments, as built: the record names them (and the card their locks)
        envs=lambda w: env_records(),
    output:
        paths.experiment_record("{exp}"),
    log:
        paths.experiment_log("{exp}", "experiment"),
    localrule: True
    run:
        write_experiment_record(wildcards.exp, output[0], log[0])
