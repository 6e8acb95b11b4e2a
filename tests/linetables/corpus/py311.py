# min-version: 3.11
# Line-table corpus: exception groups.


def groups():
    try:
        raise ExceptionGroup("eg", [ValueError(1), TypeError(2)])
    except* ValueError as e:
        print(e)
    except* TypeError:
        pass
    finally:
        print("done")
