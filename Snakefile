# sealbench: a coding-agent score someone can defend in review.
#
#   hash_pack -> leak_check -> split -> run_dummy -> run_agent -> hidden_score -> stratify -> gate
#
# Type `snakemake --cores 4 gate`. The decision lands in results/latest/decision.json.
# Each stage is one rules file here and one module in scripts/sealbench/ of the same name.

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/experiment.smk"
include: "workflow/rules/hash_pack.smk"
include: "workflow/rules/leak_check.smk"
include: "workflow/rules/split.smk"
include: "workflow/rules/environment.smk"
include: "workflow/rules/run_dummy.smk"
include: "workflow/rules/run_agent.smk"
include: "workflow/rules/hidden_score.smk"
include: "workflow/rules/task_batch.smk"
include: "workflow/rules/stratify.smk"
include: "workflow/rules/gate.smk"
include: "workflow/rules/console.smk"
