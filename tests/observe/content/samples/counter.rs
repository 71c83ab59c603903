use std::collections::HashMap;

pub const MAX: usize = 10;

#[derive(Debug, Clone)]
pub struct Counter {
    counts: HashMap<String, usize>,
}

pub enum Mode { Fast, Slow }

impl Counter {
    pub fn new() -> Self {
        Counter { counts: HashMap::new() }
    }

    pub fn add(&mut self, word: &str) {
        *self.counts.entry(word.to_string()).or_insert(0) += 1;
    }
}

pub trait Score {
    fn score(&self) -> u32;
    fn double(&self) -> u32 {
        self.score() * 2
    }
}

fn main() {
    let mut c = Counter::new();
    c.add("x");
    println!("{:?}", c);
}
