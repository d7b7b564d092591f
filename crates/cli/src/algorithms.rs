//! `kleinrock algorithms`: what can be named in a spec.

use kleinrock_cc::ALGORITHMS;

pub fn print() {
    for a in ALGORITHMS {
        let aliases = if a.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also: {})", a.aliases.join(", "))
        };
        println!("{}{aliases}: {}", a.name, a.summary);
        for p in a.params {
            println!("    {}={:<24} {}", p.key, p.values, p.help);
        }
    }
    println!("\nA spec is NAME[:KEY=VALUE]..., e.g. cubic:hystart=hspp:beta=768");
}
