"""The one compiled part: Mersenne Twister draws as random.Random makes them (noise/_fate_draws.c): a
fate's without seeding a whole generator, and world generation's.

Optional on purpose: where no C compiler or Python headers are present the build is skipped with a
warning, noise/schedule.py draws with random.Random and backoffice/world.py through its pure-Python
WorldDraws: the same numbers, slower.
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
