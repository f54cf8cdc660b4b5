"""Did a remediation work? The effectiveness assessment of an execution, and its history.

Pure modules (``fingerprint``, ``podhealth``, ``judge``, ``history``) take values and return values;
``prometheus`` turns Prometheus answers (through ``aianalysis.prometheus``, the product's one client) into
before/after values and an alert state. The operator
(``controller.assessment_reconciler``) gathers the observations and writes the verdict; the executor
takes the "before" fingerprint right before it creates a Job; the analysis reads the history.
"""

from __future__ import annotations
