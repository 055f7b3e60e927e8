# The task's aggregation: lm-eval scores every doc (one scored turn of one item, a later turn
# once per combination of earlier answers); each metric follows the model's own answers through
# them, item by item, and computes deltalogic's metric over the items (src/report/lm_eval_task.rs).
# NORMALISATION, TURNS and METRICS ([name, metric, [facet, value] or None]) are written above.


def process_results(doc, results):
    """Every metric receives the doc's log-likelihoods with what the aggregation needs."""
    record = {
        "item": doc["item"],
        "turn": doc["turn"],
        "earlier": list(doc["earlier"]),
        "loglikelihoods": [float(r[0]) for r in results],
        "choices": list(doc["choices"]),
        "labels": list(doc["labels"]),
        "gold": doc["gold"],
        "facets": dict(doc["facets"]),
    }
    return {name: record for name, _, _ in METRICS}


def _value(loglikelihood, choice):
    # deltalogic's normalisations that lm-eval's results give: the sum, per character of the
    # continuation (lm-eval's acc_norm), per UTF-8 byte (acc_bytes).
    if NORMALISATION == "sum":
        return loglikelihood
    if NORMALISATION == "per-char":
        return loglikelihood / max(len(choice), 1)
    return loglikelihood / max(len(choice.encode("utf-8")), 1)


def _answer(record):
    values = [_value(ll, c) for ll, c in zip(record["loglikelihoods"], record["choices"])]
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:  # ties to the earlier label
            best = i
    return record["labels"][best]


def _items(records, group):
    """Per item whose facets include `group`: its gold labels and the model's answers, turn by
    turn, each turn read from the doc whose prompt shows the model's own earlier answers."""
    by_item = {}
    for r in records:
        by_item.setdefault(r["item"], {})[(r["turn"], tuple(r["earlier"]))] = r
    out = []
    for item in sorted(by_item):
        docs = by_item[item]
        answers, golds, facets = [], [], None
        for turn in range(1, TURNS + 1):
            key = (turn, tuple(answers))
            if key not in docs:
                raise ValueError(f"item {item}: no doc for turn {turn} after {answers}")
            r = docs[key]
            facets = r["facets"]
            answers.append(_answer(r))
            golds.append(r["labels"][r["gold"]])
        if group is None or facets.get(group[0]) == group[1]:
            out.append((golds, answers))
    return out


def _rate(pairs):
    """The share of true outcomes among the counted ones (None when none is counted)."""
    counted = [ok for inside, ok in pairs if inside]
    return sum(counted) / len(counted) if counted else None


def _metric(metric, items):
    if metric == "accuracy":
        return _rate([(True, a[0] == g[0]) for g, a in items])
    first_right = [(g[0] == a[0]) for g, a in items]
    if metric == "initial_accuracy":
        return _rate([(True, r) for r in first_right])
    if metric == "revision_accuracy":
        return _rate([(True, a[1] == g[1]) for g, a in items])
    if metric == "revision_gap":
        i, r = _metric("initial_accuracy", items), _metric("revision_accuracy", items)
        return None if i is None or r is None else i - r
    if metric == "inertia":
        return _rate([(g[1] != g[0] and a[0] == g[0], a[1] == a[0]) for g, a in items])
    if metric == "over_flip":
        return _rate([(g[1] == g[0] and a[0] == g[0], a[1] != a[0]) for g, a in items])
    if metric == "abstain":
        return _rate([(True, a[1] == "Uncertain") for g, a in items])
    raise ValueError(f"unknown metric {metric}")


def _aggregation(metric, group):
    def aggregate(records):
        return _metric(metric, _items(records, group))

    return aggregate


for _name, _metric_name, _group in METRICS:
    globals()[_name] = _aggregation(_metric_name, _group)
