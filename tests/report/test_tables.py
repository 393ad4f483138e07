from xlt.report import markdown_table


def test_floats_keep_their_digits_and_small_ones_do_not_vanish():
    text = markdown_table([{"lr": 6.466e-05, "acc": 0.35812, "zero": 0.0, "n": 3, "gone": None}], digits=4)
    assert text.splitlines()[2] == "| 6.47e-05 | 0.3581 | 0.0000 | 3 | –    |"
    assert "| 0.012 |" in markdown_table([{"x": 0.0123}])  # two significant digits still show at 3 places
    assert "| 1.00e-03 |" in markdown_table([{"x": 0.001}])
