//! From stored label log-probs to an answer, under each normalisation. Every value is derived
//! from stored per-token log-probs: the label scores after the real prompt and, for `pmi` and
//! `calibrated`, the label scores after the same template's content-free prompts (scored through
//! the same runner and cache, so never recomputed). See `docs/normalisation.md`.

use super::records::ScoreRecord;
use anyhow::{bail, Result};
use serde::Serialize;

/// How label log-probs become one number per label (each computed below; see
/// `docs/normalisation.md`). The stored names of `mean`, `sum` and `per-char` are
/// part of existing result ids and never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Normalisation {
    /// Mean log-prob per token (the DeltaLogic paper's default).
    Mean,
    /// The label's log-prob (lm-eval's `acc`).
    Sum,
    /// Sum divided by the label's characters (lm-eval's `acc_norm`).
    PerChar,
    /// Sum divided by the label's UTF-8 bytes.
    Byte,
    /// Sum minus the same label's sum after the template's content-free prompt (lm-eval's
    /// `acc_mutual_info`, with the template's frame as the context).
    Pmi,
    /// Contextual calibration (Zhao et al. 2021): the label distribution divided by its mean
    /// over content-free inputs in the same template.
    Calibrated,
}

impl Normalisation {
    pub fn as_str(self) -> &'static str {
        match self {
            Normalisation::Mean => "mean",
            Normalisation::Sum => "sum",
            Normalisation::PerChar => "per-char",
            Normalisation::Byte => "byte",
            Normalisation::Pmi => "pmi",
            Normalisation::Calibrated => "calibrated",
        }
    }

    /// A stored or typed name; `char` is accepted for `per-char`.
    pub fn named(name: &str) -> Option<Normalisation> {
        match name {
            "char" => Some(Normalisation::PerChar),
            _ => Normalisation::ALL.into_iter().find(|n| n.as_str() == name),
        }
    }

    /// lm-evaluation-harness's per-sample metric that picks the same answer: its `acc` is the
    /// argmax of the sums, `acc_norm` of the sums over the continuation's characters, `acc_bytes`
    /// over its UTF-8 bytes (the continuation being the label text, leading space included).
    pub fn lm_eval_metric(self) -> Option<&'static str> {
        match self {
            Normalisation::Sum => Some("acc"),
            Normalisation::PerChar => Some("acc_norm"),
            Normalisation::Byte => Some("acc_bytes"),
            Normalisation::Mean | Normalisation::Pmi | Normalisation::Calibrated => None,
        }
    }

    /// `--norm` values: names, lm-eval's metric names (`acc`, `acc_norm`, `acc_bytes`), or `all`
    /// for every normalisation; in report order, each once.
    pub fn parse_list(names: &[String]) -> anyhow::Result<Vec<Normalisation>> {
        let mut out = Vec::new();
        for name in names {
            if name == "all" {
                out.extend(Normalisation::ALL);
                continue;
            }
            let metric = || {
                Normalisation::ALL
                    .into_iter()
                    .find(|n| n.lm_eval_metric() == Some(name.as_str()))
            };
            out.push(Normalisation::named(name).or_else(metric).ok_or_else(|| {
                let known: Vec<&str> = Normalisation::ALL.iter().map(|n| n.as_str()).collect();
                // lm-eval's mutual information scores the label after an empty context; `pmi`
                // keeps the template's frame, so it is not the same number.
                let hint = if name == "acc_mutual_info" {
                    "; lm-eval's `acc_mutual_info` conditions on an empty context, the nearest \
                     here is `pmi` (docs/normalisation.md)"
                } else {
                    ""
                };
                anyhow::anyhow!(
                    "unknown normalisation `{name}` (known: {}, char, all, and lm-eval's acc, \
                     acc_norm, acc_bytes){hint}",
                    known.join(", ")
                )
            })?);
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// The content-free fillers of `calibrated` (Zhao et al. 2021, §4): each replaces the item's
/// content in the same template; their label distributions are averaged.
pub const CALIBRATION_FILLERS: [&str; 3] = ["N/A", "", "[MASK]"];

/// The content-free filler of `pmi`: the template's frame with its content slots left empty, the
/// nearest this tool comes to lm-eval's unconditional context ("") while keeping the answer cue
/// the labels' surface form depends on (` True` after `Label:`, `True` opening an assistant turn).
pub const PMI_FILLER: &str = "";

impl Normalisation {
    /// Every normalisation, in the order reports list them.
    pub const ALL: [Normalisation; 6] = [
        Normalisation::Mean,
        Normalisation::Sum,
        Normalisation::PerChar,
        Normalisation::Byte,
        Normalisation::Pmi,
        Normalisation::Calibrated,
    ];

    /// The content-free prompts (by filler) whose label scores this normalisation needs.
    pub fn fillers(self) -> &'static [&'static str] {
        match self {
            Normalisation::Pmi => std::slice::from_ref(&PMI_FILLER),
            Normalisation::Calibrated => &CALIBRATION_FILLERS,
            Normalisation::Mean
            | Normalisation::Sum
            | Normalisation::PerChar
            | Normalisation::Byte => &[],
        }
    }
}

/// Each label's value under `norm`: `scores` are the labels after the prompt, `content_free`
/// the same labels (same order) after each of `norm.fillers()`'s prompts.
pub fn values(
    scores: &[ScoreRecord],
    content_free: &[Vec<ScoreRecord>],
    norm: Normalisation,
) -> Result<Vec<f64>> {
    if content_free.len() != norm.fillers().len() {
        bail!(
            "the `{}` normalisation needs {} content-free score sets, got {}",
            norm.as_str(),
            norm.fillers().len(),
            content_free.len()
        );
    }
    for cf in content_free {
        let same =
            cf.len() == scores.len() && cf.iter().zip(scores).all(|(a, b)| a.label == b.label);
        if !same {
            bail!("a content-free prompt was scored with other labels than its item's prompt");
        }
    }
    let sums: Vec<f64> = scores.iter().map(ScoreRecord::sum).collect();
    Ok(match norm {
        Normalisation::Mean => scores
            .iter()
            .map(|s| s.sum() / s.logprobs.len().max(1) as f64)
            .collect(),
        Normalisation::Sum => sums,
        Normalisation::PerChar => scores
            .iter()
            .map(|s| s.sum() / f64::from(s.chars.max(1)))
            .collect(),
        Normalisation::Byte => scores
            .iter()
            .map(|s| s.sum() / f64::from(s.bytes.max(1)))
            .collect(),
        Normalisation::Pmi => sums
            .iter()
            .zip(&content_free[0])
            .map(|(s, cf)| s - cf.sum())
            .collect(),
        Normalisation::Calibrated => {
            let p = renormalised(&sums);
            let prior = calibration_prior(content_free);
            p.iter().zip(&prior).map(|(p, q)| (p / q).ln()).collect()
        }
    })
}

/// The labels' probabilities renormalised over the label set (softmax of whole-label log-probs).
pub fn renormalised(logprobs: &[f64]) -> Vec<f64> {
    let max = logprobs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exp: Vec<f64> = logprobs.iter().map(|x| (x - max).exp()).collect();
    let total: f64 = exp.iter().sum();
    exp.iter().map(|e| e / total).collect()
}

/// Zhao et al.'s p_cf: the mean over content-free prompts of the renormalised label
/// distribution. The calibrated prediction is argmax of diag(p_cf)^-1 p (their W with b = 0);
/// its final softmax does not change the argmax, so the value kept is log(p / p_cf).
pub fn calibration_prior(content_free: &[Vec<ScoreRecord>]) -> Vec<f64> {
    let n = content_free.len() as f64;
    let mut prior = vec![0.0; content_free.first().map_or(0, Vec::len)];
    for cf in content_free {
        let sums: Vec<f64> = cf.iter().map(ScoreRecord::sum).collect();
        for (q, p) in prior.iter_mut().zip(renormalised(&sums)) {
            *q += p / n;
        }
    }
    prior
}

/// The index of the highest value, ties to the earlier label.
pub fn best(values: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(label: &str, logprobs: &[f32]) -> ScoreRecord {
        ScoreRecord {
            model: [0; 32],
            prompt: [0; 32],
            label: label.to_string(),
            tokens: (0..logprobs.len() as u32).collect(),
            logprobs: logprobs.to_vec(),
            chars: label.chars().count() as u32,
            bytes: label.len() as u32,
            backend: "test".into(),
            tool_version: "0".into(),
            compute_micros: 0,
            computed_at: 0,
        }
    }

    /// ` True` one token at -1.0; ` Uncertain` two tokens at -1.6 and -0.1 (the second nearly
    /// certain, as real tokenisers split it); ` Faux` (5 chars, 6 UTF-8 bytes) one at -1.2.
    fn labels() -> Vec<ScoreRecord> {
        vec![
            score(" True", &[-1.0]),
            score(" Uncertain", &[-1.6, -0.1]),
            score(" Fäux", &[-1.2]),
        ]
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-6, "{a:?} vs {b:?}");
        }
    }

    fn of(norm: Normalisation, cf: &[Vec<ScoreRecord>]) -> Vec<f64> {
        values(&labels(), cf, norm).unwrap()
    }

    #[test]
    fn token_char_and_byte_normalisations() {
        let (l1, l2) = (-1.7f32 as f64, -1.2f32 as f64);
        close(
            &of(Normalisation::Sum, &[]),
            &[-1.0, -1.6f32 as f64 + -0.1f32 as f64, l2],
        );
        let u = -1.6f32 as f64 + -0.1f32 as f64;
        close(&of(Normalisation::Mean, &[]), &[-1.0, u / 2.0, l2]);
        close(
            &of(Normalisation::PerChar, &[]),
            &[-0.2, u / 10.0, l2 / 5.0],
        );
        close(&of(Normalisation::Byte, &[]), &[-0.2, u / 10.0, l2 / 6.0]);
        assert!((u - l1).abs() < 1e-6);
        // Mean favours the two-token label, sum the one-token one: the flip the issue describes.
        assert_eq!(best(&of(Normalisation::Mean, &[])), 1);
        assert_eq!(best(&of(Normalisation::Sum, &[])), 0);
    }

    #[test]
    fn pmi_subtracts_the_content_free_sum() {
        let cf = vec![vec![
            score(" True", &[-0.5]),
            score(" Uncertain", &[-3.0, -0.2]),
            score(" Fäux", &[-2.0]),
        ]];
        let v = of(Normalisation::Pmi, &cf);
        close(&v, &[-0.5, -1.7 + 3.2, 0.8]);
        assert_eq!(best(&v), 1);
    }

    #[test]
    fn calibration_reweights_by_the_mean_content_free_distribution() {
        // Content-free distributions (already over the label set): ln of exact probabilities.
        let cf = |p: [f64; 3]| -> Vec<ScoreRecord> {
            let names = [" True", " Uncertain", " Fäux"];
            names
                .iter()
                .zip(p)
                .map(|(n, p)| score(n, &[p.ln() as f32]))
                .collect()
        };
        let cfs = vec![
            cf([0.6, 0.3, 0.1]),
            cf([0.2, 0.5, 0.3]),
            cf([0.4, 0.4, 0.2]),
        ];
        let prior = calibration_prior(&cfs);
        close(&prior, &[0.4, 0.4, 0.2]);
        let sums = [-1.0, -1.6f32 as f64 + -0.1f32 as f64, -1.2f32 as f64];
        let p = renormalised(&sums);
        close(&[p.iter().sum::<f64>()], &[1.0]);
        let expect: Vec<f64> = p.iter().zip(&prior).map(|(p, q)| (p / q).ln()).collect();
        let v = of(Normalisation::Calibrated, &cfs);
        close(&v, &expect);
        // Uncalibrated, ` True` wins; the prior halves ` Fäux`'s weight less than the others'.
        assert_eq!(best(&sums), 0);
        assert_eq!(best(&v), 2);
    }

    #[test]
    fn refuses_missing_or_mismatched_content_free_scores() {
        assert!(values(&labels(), &[], Normalisation::Pmi).is_err());
        let other = vec![vec![
            score(" Yes", &[-1.0]),
            score(" No", &[-1.0]),
            score(" X", &[-1.0]),
        ]];
        let err = values(&labels(), &other, Normalisation::Pmi).unwrap_err();
        assert!(err.to_string().contains("other labels"), "{err}");
    }

    #[test]
    fn ties_go_to_the_earlier_label() {
        assert_eq!(best(&[-1.0, -1.0, -2.0]), 0);
    }
}
