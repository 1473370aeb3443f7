"""Pure scoring functions: plain math on plain data, no I/O, no imports from store/embed/llm."""
