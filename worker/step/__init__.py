"""The step job: one RQ job runs one super-step of one run, under the step's lease (:mod:`.job`)."""
