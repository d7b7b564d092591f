//! `kleinrock algorithms`: what can be named in a spec.

use kleinrock_cc::ALGORITHMS;

pub fn print() {
    // One column for every `key=values`, so the help texts line up.
    let width = ALGORITHMS
        .iter()
        .flat_map(|a| a.params)
        .map(|p| p.key.len() + 1 + p.values.len())
        .max()
        .unwrap_or(0);
    for a in ALGORITHMS {
        let aliases = if a.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also: {})", a.aliases.join(", "))
        };
        println!("{}{aliases}: {}", a.name, a.summary);
        for p in a.params {
            let kv = format!("{}={}", p.key, p.values);
            println!("    {kv:<width$}  {}", p.help);
        }
    }
    println!("\nA spec is NAME[:KEY=VALUE]..., e.g. cubic:hystart=hspp:beta=768");
}
