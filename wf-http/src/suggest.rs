//! "Did you mean ...?" for a name that is not there: the nearest known name, when it is
//! within two edits (a typo, not another word). Plain data; imports nothing of the crate.

/// The known name nearest to `name`: edit distance at most 2 (and less than the name's
/// length), the first one on a tie.
pub(crate) fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        let d = distance(name, k);
        if d <= 2 && d < name.chars().count().max(1) && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

/// `sentence`, after `did you mean "x"? ` when a known name `x` is near `name`:
/// `did you mean "status"? agent_run has queries: status`.
pub(crate) fn with_suggestion<'a>(
    sentence: String,
    name: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> String {
    match nearest(name, known) {
        Some(k) => format!("did you mean {k:?}? {sentence}"),
        None => sentence,
    }
}

/// Levenshtein distance over chars (names are short: one row of memory).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_name_and_another_word_does_not() {
        assert_eq!(distance("aprove", "approve"), 1);
        assert_eq!(distance("pasue", "pause"), 2);
        assert_eq!(nearest("aprove", ["reject", "approve"]), Some("approve"));
        assert_eq!(nearest("statuss", ["status"]), Some("status"));
        assert_eq!(nearest("checkout", ["pause", "resume"]), None);
        assert_eq!(nearest("x", ["y"]), None);
    }
}
