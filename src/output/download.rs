//! `catdog download`'s summary for people (its JSON is the [`Summary`] itself).

use crate::download::Summary;
use crate::numbers::format_count;

/// How many photos of each class are where, what was left out, and what to run next.
pub fn download_summary(summary: &Summary) -> String {
    let to = summary.to.display();
    let mut out = match summary.already_there {
        true => format!("{to} is there from an earlier download: "),
        false => format!("Unpacked into {to}: "),
    };
    out.push_str(&format!(
        "{} cat photos in {to}/cat, {} dog photos in {to}/dog",
        format_count(summary.cats as u64),
        format_count(summary.dogs as u64),
    ));
    if summary.other_entries > 0 {
        out.push_str(&format!(
            "; {} other files of the archive (not photos of either class) left aside",
            summary.other_entries
        ));
    }
    out.push_str(".\n");
    if !summary.left_out.is_empty() {
        let named: Vec<String> = summary
            .left_out
            .iter()
            .take(10)
            .map(|(name, reason)| format!("{name} ({reason})"))
            .collect();
        let more = match summary.left_out.len() {
            n if n > 10 => format!(" and {} more", n - 10),
            _ => String::new(),
        };
        out.push_str(&format!(
            "Left out as empty or not images: {}: {}{more}.\n",
            summary.left_out.len(),
            named.join(", ")
        ));
    }
    out.push_str(&format!(
        "Next: catdog train --data {to}    (or try the built-in model at once: catdog predict \
         --model builtin {to}/cat)"
    ));
    out
}
