# min-version: 3.8
# Line-table corpus: 3.8+ syntax (walrus, positional-only parameters).


def walrus(data, /, limit=3):
    if (n := len(data)) > limit:
        return [y for x in data
                if (y := x * 2) > 1]
    while (chunk := data[:n]):
        data = data[n:]
        print(f"{chunk=}")
    return n
