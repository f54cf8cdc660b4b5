"""aianalysis-operator: an LLM picks a remediation workflow for an incident; the operator validates it."""

__version__ = "0.1.0"
