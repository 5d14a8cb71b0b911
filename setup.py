"""The one compiled part: fate draws without seeding a whole Mersenne Twister (noise/_fate_draws.c).

Optional on purpose: where no C compiler or Python headers are present the build is skipped with a
warning and noise/schedule.py draws with random.Random: the same numbers, about 12 % slower episodes.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "paired_rollouts.noise._fate_draws",
            ["workflow_src/paired_rollouts/noise/_fate_draws.c"],
            optional=True,
        )
    ]
)
