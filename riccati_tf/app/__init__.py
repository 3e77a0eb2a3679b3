"""The application on top of the library: the `riccati-tf` command line (`cli`), the HTML report
(`report`), figures (`plotting`), the built-in examples of each regime (`examples`)
and the particle and model experiments that write figures and JSON (`experiments`)."""

__all__: list[str] = []
