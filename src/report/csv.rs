//! One CSV schema for every benchmark: a row per (result, group, metric); proportions as
//! fractions, an undefined value as an empty field.

use super::Entry;

const HEAD: [&str; 13] = [
    "benchmark",
    "model",
    "set",
    "template",
    "normalisation",
    "result_id",
    "group_by",
    "group",
    "metric",
    "value",
    "lo",
    "hi",
    "n",
];

pub fn long(entries: &[Entry]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEAD).expect("writing CSV to memory");
    let field = |x: Option<f64>| x.map_or_else(String::new, |v| v.to_string());
    for e in entries {
        for g in &e.evaluation.groups {
            for (column, m) in e.evaluation.columns.iter().zip(&g.metrics) {
                let Some(m) = m else { continue };
                let who = [
                    &e.benchmark,
                    &e.model,
                    &e.set,
                    &e.template,
                    &e.normalisation,
                    &e.result_id,
                    &g.by,
                    &g.value,
                ];
                let mut rec: Vec<String> = who.iter().map(|s| s.to_string()).collect();
                rec.push(column.key.to_string());
                rec.extend([field(m.value), field(m.lo), field(m.hi), m.n.to_string()]);
                w.write_record(&rec).expect("writing CSV to memory");
            }
        }
    }
    String::from_utf8(w.into_inner().expect("writing CSV to memory")).expect("CSV of strings")
}
