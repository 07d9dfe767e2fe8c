"""The shell reader: ``lexer`` (text to tokens), ``grouping`` (tokens to pipelines),
``normalise`` (pipelines to the commands they really run), with ``vocabulary`` (which programs
wrap, elevate or interpret), ``programs`` (each such program's argument reader) and
``expansion`` (what a word or pipeline becomes when the text alone says so). Pure.
"""
