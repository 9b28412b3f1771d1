"""Running the ``nunasim`` command in-process, for the tests of its output and exit codes."""

from nunasim.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    """(exit code, standard output, standard error) of ``nunasim ARGV...``."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
