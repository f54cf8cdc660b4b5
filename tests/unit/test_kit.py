from aianalysis import kit


def test_backoff_doubles_from_the_first_delay_up_to_its_cap_and_ends() -> None:
    executor = kit.Backoff(first_seconds=2.0, max_seconds=64.0, retries=6)

    assert [executor.delay(n) for n in range(1, 8)] == [2, 4, 8, 16, 32, 64, 64]
    assert executor.allows(6) and not executor.allows(7)


def test_the_reconcilers_backoff_is_capped_at_five_minutes() -> None:
    reconciles = kit.Backoff.of_reconciles(first_seconds=10.0, retries=3)

    assert [reconciles.delay(n) for n in (1, 2, 3, 6)] == [10, 20, 40, 300]
    assert not reconciles.allows(4)
