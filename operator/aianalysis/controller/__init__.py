"""The operator process: kopf handlers (the only kopf importer besides the executor's), the
reconcilers of AIAnalyses and failed WorkflowExecutions, recovery, the LLM budget and leadership."""
