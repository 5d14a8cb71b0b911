"""The surrogate policy scale: a log-linear softmax agent that acts in the real back office.

It chooses, at each turn, among a finite menu of candidate actions built from the task's plan and the
last observation (``menu``); its choice probabilities are a softmax over one-hot features of
(context, action) (``policy``), so its score vector is exact and analytic. ``calibration`` fits the
initial parameters to the paper's step-0 agent, ``trainer`` is the group-relative update, ``probe`` the
exact gradient-covariance probe, ``power`` the seed-resampling power table and ``prediction`` amendment
A3's verdicts (the paired arms' gaps, predicted by a surrogate fitted without them, against the paper's).
"""
