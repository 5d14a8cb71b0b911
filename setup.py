"""The one compiled part: fate draws without seeding a whole Mersenne Twister (pairing/_fate_draws.c).

Optional on purpose: where no C compiler or Python headers are present the build is skipped with a
warning and pairing/dice.py draws with random.Random: the same numbers, about 12 % slower episodes.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "paired_rollouts.pairing._fate_draws",
            ["workflow_src/paired_rollouts/pairing/_fate_draws.c"],
            optional=True,
        )
    ]
)
