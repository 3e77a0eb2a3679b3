"""Reading and writing: the strict JSON / YAML 1.2 specification loader (`spec`), output
folders that never overwrite a file they did not write (`files`), and plain JSON values from
results (`serialize`), figures (`figures`, `plots`) and equations in HTML pages as MathML
(`htmlmath`)."""

__all__: list[str] = []
