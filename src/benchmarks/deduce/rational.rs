//! Exact rationals for re-executing solution steps. GSM8K's calculator results are decimals
//! (`0.5`, `1.25`, `130000`), and a template is accepted only if every step reproduces its
//! result *exactly*, so floating point (where `0.1 * 3 != 0.3`) cannot decide acceptance.
//! An i128 numerator and denominator, always reduced, with checked operations: an overflow is a
//! reason to reject an item, never a wrap. Hand-written rather than `num-rational` because four
//! checked operations, parsing and decimal rendering are all that is needed, and the crate's
//! overflowing operations panic rather than report.

use std::cmp::Ordering;
use std::fmt;

/// A reduced fraction with a positive denominator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rational {
    num: i128,
    den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rational {
    pub const ZERO: Rational = Rational { num: 0, den: 1 };
    pub const ONE: Rational = Rational { num: 1, den: 1 };

    pub fn int(n: i128) -> Rational {
        Rational { num: n, den: 1 }
    }

    /// `num / den`, reduced; `None` when `den` is zero.
    pub fn new(num: i128, den: i128) -> Option<Rational> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let sign = if den < 0 { -1 } else { 1 };
        Some(Rational {
            num: sign * num / g,
            den: sign * den / g,
        })
    }

    pub fn numer(self) -> i128 {
        self.num
    }

    pub fn is_whole(self) -> bool {
        self.den == 1
    }

    pub fn is_positive(self) -> bool {
        self.num > 0
    }

    pub fn checked_add(self, o: Rational) -> Option<Rational> {
        let g = gcd(self.den, o.den);
        let l = (self.den / g).checked_mul(o.den)?;
        let a = self.num.checked_mul(l / self.den)?;
        let b = o.num.checked_mul(l / o.den)?;
        Rational::new(a.checked_add(b)?, l)
    }

    pub fn checked_sub(self, o: Rational) -> Option<Rational> {
        self.checked_add(Rational {
            num: o.num.checked_neg()?,
            den: o.den,
        })
    }

    pub fn checked_mul(self, o: Rational) -> Option<Rational> {
        // Cross-reduce first so that products of reduced fractions stay small.
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        let n = (self.num / g1).checked_mul(o.num / g2)?;
        let d = (self.den / g2).checked_mul(o.den / g1)?;
        Rational::new(n, d)
    }

    /// `None` on division by zero or overflow.
    pub fn checked_div(self, o: Rational) -> Option<Rational> {
        if o.num == 0 {
            return None;
        }
        self.checked_mul(Rational {
            num: o.den,
            den: o.num,
        })
    }

    /// Parses `12`, `-3`, `1.25`, `.5`, `1,200` (thousands commas) exactly; `None` otherwise.
    pub fn parse_decimal(s: &str) -> Option<Rational> {
        let (neg, s) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let s: String = s.chars().filter(|c| *c != ',').collect();
        let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
            return None;
        }
        let digits = format!("{int}{frac}");
        let num: i128 = digits.parse().ok()?;
        let den = 10i128.checked_pow(u32::try_from(frac.len()).ok()?)?;
        Rational::new(if neg { -num } else { num }, den)
    }

    /// Decimal places needed to write it exactly, or `None` if it does not terminate (the
    /// denominator has a prime factor other than 2 and 5).
    pub fn decimal_places(self) -> Option<u32> {
        let mut d = self.den;
        let (mut twos, mut fives) = (0, 0);
        while d % 2 == 0 {
            d /= 2;
            twos += 1;
        }
        while d % 5 == 0 {
            d /= 5;
            fives += 1;
        }
        (d == 1).then_some(twos.max(fives))
    }

    /// Written with exactly `places` decimals (rounding is never needed: callers ask for at
    /// least [`Rational::decimal_places`]); `None` if that is not exact.
    pub fn to_decimal(self, places: u32) -> Option<String> {
        let scale = 10i128.checked_pow(places)?;
        let scaled = self.num.checked_mul(scale)?;
        if scaled % self.den != 0 {
            return None;
        }
        let v = scaled / self.den;
        let sign = if v < 0 { "-" } else { "" };
        let v = v.unsigned_abs();
        let scale = scale.unsigned_abs();
        Some(if places == 0 {
            format!("{sign}{v}")
        } else {
            format!(
                "{sign}{}.{:0width$}",
                v / scale,
                v % scale,
                width = places as usize
            )
        })
    }
}

impl fmt::Display for Rational {
    /// The shortest exact decimal, or `p/q` when there is none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.decimal_places().and_then(|p| self.to_decimal(p)) {
            Some(s) => f.write_str(&s),
            None => write!(f, "{}/{}", self.num, self.den),
        }
    }
}

impl PartialOrd for Rational {
    fn partial_cmp(&self, o: &Rational) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Rational {
    fn cmp(&self, o: &Rational) -> Ordering {
        // Exact for the magnitudes kept here; on overflow fall back to the float order, which
        // only orders (it never decides equality, which is structural).
        match (self.num.checked_mul(o.den), o.num.checked_mul(self.den)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => (self.num as f64 / self.den as f64)
                .partial_cmp(&(o.num as f64 / o.den as f64))
                .unwrap_or(Ordering::Equal),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Rational {
        Rational::parse_decimal(s).unwrap()
    }

    #[test]
    fn decimal_arithmetic_is_exact() {
        assert_eq!(r("0.1").checked_mul(Rational::int(3)).unwrap(), r("0.3"));
        assert_eq!(
            r("1,200").checked_div(r(".5")).unwrap(),
            Rational::int(2400)
        );
        assert_eq!(r("2").checked_sub(r("2.75")).unwrap().to_string(), "-0.75");
        assert_eq!(
            Rational::int(10)
                .checked_div(Rational::int(3))
                .unwrap()
                .to_string(),
            "10/3"
        );
        assert_eq!(r("1.5").to_decimal(2).as_deref(), Some("1.50"));
        assert_eq!(r("1.25").to_decimal(1), None);
        assert!(Rational::int(1).checked_div(Rational::ZERO).is_none());
        assert!(Rational::int(i128::MAX)
            .checked_add(Rational::ONE)
            .is_none());
        assert_eq!(Rational::parse_decimal("1.2.3"), None);
        assert_eq!(Rational::parse_decimal("."), None);
        assert!(r("2.5") > r("2.49"));
    }
}
