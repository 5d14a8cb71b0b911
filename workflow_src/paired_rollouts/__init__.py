"""paired-rollouts: the pipeline behind "Luck Is Not Skill: When Do Paired Rollouts Help
Group-Relative RL of LLM Agents?".

Sub-packages, one job each: ``backoffice`` (simulated world, tools, tasks, grader), ``noise``
(event-keyed fault schedules, seeds), ``agents`` (scripted reference), ``training`` (TRL GRPO runs),
``evaluation`` (checkpoint roll-outs into episode records), ``stats`` (curves, bootstrap, luck share,
decisions), ``probe`` (gradient-covariance probe), ``prereg`` (RFC 3161 freeze and verification),
``render`` (LaTeX tables, figures, the PDF). ``cli`` is the ``paired-rollouts`` entry point.
"""

__version__ = "0.1.0"
