//! A synthetic world per trace: two speakers talk over many dated sessions;
//! facts about them change over time (update chains), near-duplicate facts
//! about other people distract, each fact is said through varied templates
//! (paraphrases, synonyms, relative dates) so that plain string matching is
//! not enough, and filler chat surrounds it all. Questions (single-hop,
//! multi-hop, temporal, knowledge-update) come with a gold answer and the
//! ids of their evidence messages. Deterministic for a seed.

use std::ops::RangeInclusive;

use crate::synth::Rng;

/// The size of a world.
#[derive(Debug, Clone)]
pub struct WorldSpec {
    /// Number of sessions, drawn from this range.
    pub sessions: RangeInclusive<usize>,
    /// Messages in the whole conversation, drawn from this range.
    pub messages: RangeInclusive<usize>,
    /// Questions asked about it.
    pub questions: usize,
    /// Seed.
    pub seed: u64,
}

impl Default for WorldSpec {
    /// LoCoMo-like scale: 19 to 32 sessions, 350 to 700 messages, 200 questions.
    fn default() -> Self {
        WorldSpec {
            sessions: 19..=32,
            messages: 350..=700,
            questions: 200,
            seed: 1,
        }
    }
}

/// What a message carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageKind {
    /// States a fact's value for the first time.
    Fact {
        /// Index into [`World::facts`].
        fact: usize,
        /// Index into the fact's values.
        value: usize,
    },
    /// Changes a fact's value.
    Update {
        /// Index into [`World::facts`].
        fact: usize,
        /// Index into the fact's values (>= 1).
        value: usize,
    },
    /// A near-duplicate fact about someone else.
    Distractor,
    /// Small talk.
    Filler,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// LoCoMo-style id `D<session>:<turn>`, both 1-based.
    pub id: String,
    /// Index of the speaker (0 or 1).
    pub speaker: usize,
    /// What is said.
    pub text: String,
    /// What it carries.
    pub kind: MessageKind,
}

/// A dated session of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldSession {
    /// 1-based.
    pub number: usize,
    /// Day of the session, `YYYY-MM-DD`.
    pub date: String,
    /// Its messages in order.
    pub messages: Vec<Message>,
}

/// A fact about a speaker, with the chain of values it takes over time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// The speaker it is about.
    pub speaker: usize,
    /// Index into the attribute table.
    pub attribute: usize,
    /// The values in the order they become true, with the message that says
    /// so and the day it happened.
    pub values: Vec<FactValue>,
}

/// One value of a fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactValue {
    /// The value in its canonical form (what a gold answer says).
    pub value: String,
    /// Id of the message that states it.
    pub message: String,
    /// The day it happened, `YYYY-MM-DD` (may precede the session: "last week").
    pub date: String,
}

/// The kinds of questions, as LoCoMo has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuestionKind {
    /// One fact, never updated.
    SingleHop,
    /// Two facts joined.
    MultiHop,
    /// When something happened.
    Temporal,
    /// The latest value of an updated fact.
    KnowledgeUpdate,
}

impl QuestionKind {
    /// The name used in files and reports.
    pub fn name(self) -> &'static str {
        match self {
            QuestionKind::SingleHop => "single-hop",
            QuestionKind::MultiHop => "multi-hop",
            QuestionKind::Temporal => "temporal",
            QuestionKind::KnowledgeUpdate => "knowledge-update",
        }
    }
}

/// A question about the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// Its kind.
    pub kind: QuestionKind,
    /// The question text.
    pub text: String,
    /// The gold answer.
    pub gold: String,
    /// Ids of the messages whose information the answer needs.
    pub evidence: Vec<String>,
    /// The fact values the answer needs, as (index into [`World::facts`],
    /// index into its values): what a memory must still hold to answer.
    pub needs: Vec<(usize, usize)>,
}

/// A whole synthetic world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    /// The two speakers' names.
    pub speakers: [String; 2],
    /// Facts about them.
    pub facts: Vec<Fact>,
    /// The conversation.
    pub sessions: Vec<WorldSession>,
    /// Questions about it.
    pub questions: Vec<Question>,
}

struct Attribute {
    /// Noun for questions ("city", "job").
    what: &'static str,
    /// Events: several per speaker, each said once and never updated.
    event: bool,
    values: &'static [&'static str],
    /// Synonyms used in messages for some values: (canonical, said as).
    synonyms: &'static [(&'static str, &'static str)],
    /// Statement templates; `{v}` is the value, `{when}` a relative date.
    say: &'static [&'static str],
    /// Update templates.
    change: &'static [&'static str],
    /// Question about the current value; `{p}` is the person.
    ask: &'static str,
    /// Question about when the latest value became true.
    ask_when: &'static str,
}

const ATTRIBUTES: &[Attribute] = &[
    Attribute {
        what: "activity",
        event: true,
        values: &[
            "ran a half marathon",
            "visited Rome",
            "went to a Coldplay concert",
            "read Dune",
            "learned to bake sourdough",
            "volunteered at the animal shelter",
            "got a tattoo",
            "hosted a game night",
            "went skydiving",
            "fixed up an old bike",
            "planted tomatoes",
            "joined a choir",
            "took a pottery class",
            "went camping by the lake",
            "adopted a routine of morning yoga",
            "painted a sunrise",
            "went to a job fair",
            "visited my grandparents",
            "signed up for a coding bootcamp",
            "saw the northern lights",
        ],
        synonyms: &[
            ("ran a half marathon", "did 21 km on foot"),
            ("went skydiving", "jumped out of a plane, with a parachute"),
        ],
        say: &[
            "I {v} {when}!",
            "Guess what, I {v} {when}.",
            "So {when} I {v}, it was amazing.",
            "Can't stop thinking about how I {v} {when}.",
        ],
        change: &[],
        ask: "What did {p} do on {d}?",
        ask_when: "What day was it when {p} {v}?",
    },
    Attribute {
        what: "city",
        event: false,
        values: &[
            "Paris", "Lisbon", "Denver", "Osaka", "Toronto", "Nairobi", "Prague", "Austin",
            "Dublin", "Seoul",
        ],
        synonyms: &[
            ("Paris", "the City of Light"),
            ("Denver", "the Mile High City"),
        ],
        say: &[
            "I live in {v} these days.",
            "Home for me is {v}, been there a while.",
            "We settled in {v} {when}.",
            "Loving life in {v} so far!",
        ],
        change: &[
            "Big news: I moved to {v} {when}!",
            "Packed everything up and relocated to {v} {when}.",
            "So I'm not where I was anymore, I live in {v} now.",
        ],
        ask: "Which city does {p} live in?",
        ask_when: "When did {p} move to {v}?",
    },
    Attribute {
        what: "job",
        event: false,
        values: &[
            "nurse",
            "software engineer",
            "baker",
            "teacher",
            "photographer",
            "accountant",
            "carpenter",
            "pilot",
        ],
        synonyms: &[
            ("nurse", "work in nursing"),
            ("software engineer", "write code for a living"),
            ("baker", "bake bread at a bakery"),
        ],
        say: &[
            "I work as a {v}.",
            "By day I'm a {v}, honestly I love it.",
            "I started working as a {v} {when}.",
        ],
        change: &[
            "I quit and became a {v} {when}.",
            "Career change! I'm a {v} since {when}.",
            "New job: {v}. Started {when}.",
        ],
        ask: "What is {p}'s job?",
        ask_when: "When did {p} start working as a {v}?",
    },
    Attribute {
        what: "pet",
        event: false,
        values: &[
            "a beagle named Max",
            "a cat named Luna",
            "a parrot named Kiwi",
            "a rabbit named Oreo",
            "a husky named Storm",
        ],
        synonyms: &[],
        say: &[
            "We have {v} at home.",
            "My best friend is {v}, honestly.",
            "We adopted {v} {when}.",
        ],
        change: &[
            "We adopted {v} {when}, the family grew!",
            "Meet the newest member: {v}, since {when}.",
        ],
        ask: "What pet does {p} have?",
        ask_when: "When did {p} adopt {v}?",
    },
    Attribute {
        what: "hobby",
        event: false,
        values: &[
            "painting",
            "rock climbing",
            "pottery",
            "salsa dancing",
            "birdwatching",
            "chess",
            "surfing",
        ],
        synonyms: &[
            ("painting", "putting paint on canvas"),
            ("rock climbing", "bouldering at the gym"),
        ],
        say: &[
            "My favourite way to unwind is {v}.",
            "I spend most weekends {v}.",
            "I took up {v} {when}.",
        ],
        change: &[
            "I've switched hobbies, it's all {v} now since {when}.",
            "Lately I'm obsessed with {v}, started {when}.",
        ],
        ask: "What is {p}'s main hobby?",
        ask_when: "When did {p} take up {v}?",
    },
    Attribute {
        what: "car",
        event: false,
        values: &[
            "a red Toyota",
            "a blue Volvo",
            "an old Jeep",
            "a white Tesla",
            "a green Mini",
        ],
        synonyms: &[],
        say: &[
            "I drive {v}.",
            "My ride is {v}, nothing fancy.",
            "I bought {v} {when}.",
        ],
        change: &["Sold my car and got {v} {when}.", "Upgraded to {v} {when}!"],
        ask: "What car does {p} drive?",
        ask_when: "When did {p} get {v}?",
    },
    Attribute {
        what: "favorite food",
        event: false,
        values: &[
            "ramen",
            "tacos",
            "lasagna",
            "sushi",
            "pho",
            "dumplings",
            "paella",
        ],
        synonyms: &[("ramen", "noodle soup from the Japanese place")],
        say: &[
            "Nothing beats {v} for me.",
            "I could eat {v} every day.",
            "I fell in love with {v} {when}.",
        ],
        change: &[
            "Honestly, {v} is my new favourite, ever since {when}.",
            "I've changed my mind, {v} wins now, since {when}.",
        ],
        ask: "What is {p}'s favorite food?",
        ask_when: "Since when is {v} {p}'s favorite food?",
    },
];

const NAMES: &[&str] = &[
    "Caroline", "Melanie", "Jon", "Gina", "Evan", "Sam", "Priya", "Tomas", "Aiko", "Nate", "Lena",
    "Omar",
];
const OTHERS: &[&str] = &[
    "my cousin",
    "my neighbour",
    "my coworker",
    "my sister",
    "a friend from school",
    "my boss",
];
const FILLER: &[&str] = &[
    "Haha, that sounds great!",
    "How was your weekend?",
    "I totally get that.",
    "Wow, tell me more.",
    "Did you watch the game last night?",
    "The weather has been wild this week.",
    "I need more coffee today.",
    "That reminds me of something funny.",
    "Talk soon, have a good one!",
    "Ugh, Mondays.",
    "I'm so proud of you!",
    "Let's catch up properly next time.",
];
const RELATIVE: &[(&str, i64)] = &[
    ("yesterday", 1),
    ("two days ago", 2),
    ("last week", 7),
    ("a couple of weeks ago", 14),
    ("last month", 30),
    ("three days ago", 3),
];

fn pick<'a>(rng: &mut Rng, list: &[&'a str]) -> &'a str {
    list[rng.below(list.len())]
}

/// Days since 1970-01-01 for a civil date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The day number (days since 1970-01-01) of a `YYYY-MM-DD` date.
pub fn days_of(date: &str) -> Option<i64> {
    let mut parts = date.splitn(3, '-');
    let y = parts.next()?.parse().ok()?;
    let m = parts.next()?.parse().ok()?;
    let d = parts.next()?.parse().ok()?;
    Some(days_from_civil(y, m, d))
}

fn render(template: &str, value: &str, when: &str) -> String {
    template.replace("{v}", value).replace("{when}", when)
}

/// The form a value is said in: sometimes a synonym.
fn spoken(rng: &mut Rng, attr: &Attribute, value: &str) -> String {
    match attr.synonyms.iter().find(|(canon, _)| *canon == value) {
        Some((_, said)) if rng.below(2) == 0 => said.to_string(),
        _ => value.to_string(),
    }
}

/// A fact as first drawn: the speaker, the attribute, and the values it
/// takes in turn.
type DrawnFact = (usize, usize, Vec<String>);

/// Session dates: about one to three weeks apart, from a seeded start.
fn session_dates(rng: &mut Rng, n_sessions: usize) -> Vec<i64> {
    let mut day = days_from_civil(2023, 1 + rng.below(12) as i64, 1 + rng.below(28) as i64);
    let mut dates = Vec::with_capacity(n_sessions);
    for _ in 0..n_sessions {
        dates.push(day);
        day += 5 + rng.below(17) as i64;
    }
    dates
}

/// Facts: every attribute for both speakers; some change later.
fn draw_facts(rng: &mut Rng) -> Vec<DrawnFact> {
    let mut facts = Vec::new();
    for speaker in 0..2 {
        for (attribute, attr) in ATTRIBUTES.iter().enumerate() {
            if attr.event {
                let mut chosen: Vec<&str> = Vec::new();
                let k = 8 + rng.below(8);
                while chosen.len() < k.min(attr.values.len()) {
                    let v = pick(rng, attr.values);
                    if !chosen.contains(&v) {
                        chosen.push(v);
                    }
                }
                for v in chosen {
                    facts.push((speaker, attribute, vec![v.to_string()]));
                }
                continue;
            }
            let updates = match rng.below(10) {
                0..=3 => 0,
                4..=7 => 1,
                _ => 2,
            };
            let mut values: Vec<String> = Vec::new();
            while values.len() < 1 + updates {
                let v = pick(rng, attr.values).to_string();
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            facts.push((speaker, attribute, values));
        }
    }
    facts
}

/// Which session states which fact value (fact, value index): first values
/// early, updates later, in order.
fn plan_sessions(
    rng: &mut Rng,
    facts: &[DrawnFact],
    n_sessions: usize,
) -> Vec<Vec<(usize, usize)>> {
    let mut plan: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n_sessions];
    for (f, (_, attribute, values)) in facts.iter().enumerate() {
        let first = if ATTRIBUTES[*attribute].event {
            rng.below(n_sessions)
        } else {
            rng.below((n_sessions / 3).max(1))
        };
        plan[first].push((f, 0));
        let mut at = first;
        for v in 1..values.len() {
            let room = n_sessions - 1 - at;
            if room == 0 {
                break;
            }
            at += 1 + rng.below(room);
            plan[at].push((f, v));
        }
    }
    plan
}

/// The message that states value `v` of fact `f` in a session on
/// `session_date`, and the value as the fact records it.
fn fact_message(
    rng: &mut Rng,
    fact: &DrawnFact,
    f: usize,
    v: usize,
    id: String,
    session_date: i64,
) -> (Message, FactValue) {
    let (speaker, attribute, values) = fact;
    let attr = &ATTRIBUTES[*attribute];
    let (rel, back) = RELATIVE[rng.below(RELATIVE.len())];
    let templates = if v == 0 { attr.say } else { attr.change };
    let template = pick(rng, templates);
    let value = spoken(rng, attr, &values[v]);
    let happened = if template.contains("{when}") {
        session_date - back
    } else {
        session_date
    };
    let stated = FactValue {
        value: values[v].clone(),
        message: id.clone(),
        date: memtrace_engine::civil_from_days(happened),
    };
    let kind = if v == 0 {
        MessageKind::Fact { fact: f, value: v }
    } else {
        MessageKind::Update { fact: f, value: v }
    };
    let message = Message {
        id,
        speaker: *speaker,
        text: render(template, &value, rel),
        kind,
    };
    (message, stated)
}

/// A message about someone else's attribute, which a memory system should
/// not take for a speaker's fact.
fn distractor(rng: &mut Rng, id: String) -> Message {
    let attr = &ATTRIBUTES[rng.below(ATTRIBUTES.len())];
    let other = pick(rng, OTHERS);
    let value = pick(rng, attr.values);
    let text = match rng.below(3) {
        0 => format!(
            "Funny, {other} has {value} as {} too... or was it?",
            attr.what
        ),
        1 => format!(
            "{} {other}'s {} is {value}.",
            if rng.below(2) == 0 {
                "Oh, and"
            } else {
                "Random, but"
            },
            attr.what
        ),
        _ => format!("Not me, but {other} mentioned {value} the other day."),
    };
    Message {
        id,
        speaker: rng.below(2),
        text,
        kind: MessageKind::Distractor,
    }
}

impl World {
    /// Generates a world.
    pub fn generate(spec: &WorldSpec) -> World {
        let mut rng = Rng::new(spec.seed ^ 0x05ee_d0f3_a11d);
        let span = |rng: &mut Rng, r: &RangeInclusive<usize>| {
            r.start() + rng.below(r.end().saturating_sub(*r.start()) + 1)
        };
        let n_sessions = span(&mut rng, &spec.sessions).max(1);
        let n_messages = span(&mut rng, &spec.messages).max(n_sessions);
        let a = rng.below(NAMES.len());
        let b = (a + 1 + rng.below(NAMES.len() - 1)) % NAMES.len();
        let speakers = [NAMES[a].to_string(), NAMES[b].to_string()];

        let dates = session_dates(&mut rng, n_sessions);
        let facts = draw_facts(&mut rng);
        let plan = plan_sessions(&mut rng, &facts, n_sessions);

        let mut fact_values: Vec<Vec<FactValue>> = vec![Vec::new(); facts.len()];
        let per_session = n_messages / n_sessions;
        let mut extra = n_messages % n_sessions;
        let mut sessions = Vec::with_capacity(n_sessions);
        for (s, planned) in plan.into_iter().enumerate() {
            let number = s + 1;
            let mut count = per_session + usize::from(extra > 0);
            extra = extra.saturating_sub(1);
            count = count.max(planned.len() + 1);
            // Slots for the planned facts, the rest distractors and filler.
            let mut kinds: Vec<Option<(usize, usize)>> = planned.into_iter().map(Some).collect();
            while kinds.len() < count {
                kinds.push(None);
            }
            for i in (1..kinds.len()).rev() {
                let j = rng.below(i + 1);
                kinds.swap(i, j);
            }
            let mut messages = Vec::with_capacity(count);
            for (turn, slot) in kinds.into_iter().enumerate() {
                let id = format!("D{number}:{}", turn + 1);
                let message = match slot {
                    Some((f, v)) => {
                        let (message, stated) =
                            fact_message(&mut rng, &facts[f], f, v, id, dates[s]);
                        fact_values[f].push(stated);
                        message
                    }
                    None if rng.below(4) == 0 => distractor(&mut rng, id),
                    None => Message {
                        id,
                        speaker: turn % 2,
                        text: pick(&mut rng, FILLER).to_string(),
                        kind: MessageKind::Filler,
                    },
                };
                messages.push(message);
            }
            sessions.push(WorldSession {
                number,
                date: memtrace_engine::civil_from_days(dates[s]),
                messages,
            });
        }

        let facts: Vec<Fact> = facts
            .into_iter()
            .zip(fact_values)
            .map(|((speaker, attribute, _), values)| Fact {
                speaker,
                attribute,
                values,
            })
            .collect();
        let questions = Self::questions(&mut rng, &speakers, &facts, spec.questions);
        World {
            speakers,
            facts,
            sessions,
            questions,
        }
    }

    fn questions(rng: &mut Rng, speakers: &[String; 2], facts: &[Fact], n: usize) -> Vec<Question> {
        const KINDS: [QuestionKind; 4] = [
            QuestionKind::SingleHop,
            QuestionKind::MultiHop,
            QuestionKind::Temporal,
            QuestionKind::KnowledgeUpdate,
        ];
        let candidates = |kind: QuestionKind| -> Vec<usize> {
            (0..facts.len())
                .filter(|&i| {
                    let f = &facts[i];
                    let event = ATTRIBUTES[f.attribute].event;
                    match kind {
                        QuestionKind::SingleHop => f.values.len() == 1,
                        QuestionKind::KnowledgeUpdate => f.values.len() > 1,
                        QuestionKind::Temporal => !f.values.is_empty(),
                        QuestionKind::MultiHop => !event && !f.values.is_empty() && f.speaker == 0,
                    }
                })
                .collect()
        };
        let pools: Vec<Vec<usize>> = KINDS.iter().map(|k| candidates(*k)).collect();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            // Kinds in turn; a kind this world cannot ask about gives way to the next.
            let Some(k) = (0..4).map(|j| (i + j) % 4).find(|&k| !pools[k].is_empty()) else {
                break;
            };
            let fi = pools[k][rng.below(pools[k].len())];
            let f = &facts[fi];
            let attr = &ATTRIBUTES[f.attribute];
            let person = &speakers[f.speaker];
            let last_index = f.values.len() - 1;
            let last = &f.values[last_index];
            let ask = |t: &str| {
                t.replace("{p}", person)
                    .replace("{v}", &last.value)
                    .replace("{d}", &last.date)
            };
            let q = match KINDS[k] {
                QuestionKind::SingleHop => Question {
                    kind: KINDS[k],
                    text: ask(attr.ask),
                    gold: last.value.clone(),
                    evidence: vec![last.message.clone()],
                    needs: vec![(fi, last_index)],
                },
                QuestionKind::KnowledgeUpdate => Question {
                    kind: KINDS[k],
                    text: format!("{} (now)", ask(attr.ask)),
                    gold: last.value.clone(),
                    evidence: vec![f.values[0].message.clone(), last.message.clone()],
                    needs: vec![(fi, last_index)],
                },
                QuestionKind::Temporal => Question {
                    kind: KINDS[k],
                    text: ask(attr.ask_when),
                    gold: last.date.clone(),
                    evidence: vec![last.message.clone()],
                    needs: vec![(fi, last_index)],
                },
                QuestionKind::MultiHop => {
                    let other = facts
                        .iter()
                        .enumerate()
                        .find(|(_, g)| g.attribute == f.attribute && g.speaker != f.speaker)
                        .and_then(|(gi, g)| Some((gi, g.values.len().checked_sub(1)?)));
                    let Some((gi, gv)) = other else { continue };
                    let other = &facts[gi].values[gv];
                    let same = other.value == last.value;
                    Question {
                        kind: KINDS[k],
                        text: format!(
                            "Do {} and {} have the same {} now?",
                            speakers[0], speakers[1], attr.what
                        ),
                        gold: if same {
                            format!("Yes, both: {}", last.value)
                        } else {
                            format!("No: {} vs {}", last.value, other.value)
                        },
                        evidence: vec![last.message.clone(), other.message.clone()],
                        needs: vec![(fi, last_index), (gi, gv)],
                    }
                }
            };
            out.push(q);
        }
        out
    }

    /// A fact value said plainly, as a memory system would store it:
    /// "Caroline's city is Paris (since 2023-04-24)".
    pub fn fact_sentence(&self, fact: usize, value: usize) -> String {
        self.sentence(fact, &self.facts[fact].values[value].value, value)
    }

    /// What a fact is about ("city", "job", "activity"): the topic a dense
    /// retriever would see in a message that states it.
    pub fn topic(&self, fact: usize) -> &'static str {
        ATTRIBUTES[self.facts[fact].attribute].what
    }

    /// The same sentence with a wrong value (another value of the attribute,
    /// chosen by `salt`): what a degraded memory holds.
    pub fn wrong_sentence(&self, fact: usize, value: usize, salt: u64) -> String {
        self.sentence(fact, self.wrong_value(fact, value, salt), value)
    }

    /// Another value of the fact's attribute, chosen by `salt`: what a
    /// degraded memory says instead of the right one.
    pub fn wrong_value(&self, fact: usize, value: usize, salt: u64) -> &'static str {
        let f = &self.facts[fact];
        let attr = &ATTRIBUTES[f.attribute];
        let right = &f.values[value].value;
        let others: Vec<&'static str> =
            attr.values.iter().copied().filter(|v| v != right).collect();
        others[(salt % others.len() as u64) as usize]
    }

    /// The forms a fact value may be said in: its canonical form, then its
    /// synonym when it has one.
    pub fn said_forms(&self, fact: usize, value: usize) -> Vec<&str> {
        let f = &self.facts[fact];
        let attr = &ATTRIBUTES[f.attribute];
        let canonical = f.values[value].value.as_str();
        let mut forms = vec![canonical];
        forms.extend(
            attr.synonyms
                .iter()
                .filter(|(c, _)| *c == canonical)
                .map(|(_, said)| *said),
        );
        forms
    }

    fn sentence(&self, fact: usize, said: &str, value: usize) -> String {
        let f = &self.facts[fact];
        let attr = &ATTRIBUTES[f.attribute];
        let who = &self.speakers[f.speaker];
        let date = &f.values[value].date;
        if attr.event {
            format!("{who} {said} on {date}")
        } else {
            format!("{who}'s {} is {said} (since {date})", attr.what)
        }
    }

    /// Every message, in conversation order.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.sessions.iter().flat_map(|s| s.messages.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn world(seed: u64) -> World {
        World::generate(&WorldSpec {
            seed,
            ..WorldSpec::default()
        })
    }

    #[test]
    fn same_seed_same_world_other_seed_other_world() {
        assert_eq!(world(3), world(3));
        assert_ne!(world(3), world(4));
    }

    #[test]
    fn locomo_scale_by_default() {
        for seed in 0..8 {
            let w = world(seed);
            assert!(
                (19..=32).contains(&w.sessions.len()),
                "{}",
                w.sessions.len()
            );
            let n = w.messages().count();
            assert!((350..=700).contains(&n), "{n}");
            assert_eq!(w.questions.len(), 200);
            assert_ne!(w.speakers[0], w.speakers[1]);
            let kinds: HashSet<_> = w.questions.iter().map(|q| q.kind).collect();
            assert_eq!(kinds.len(), 4, "all four kinds of questions");
        }
    }

    #[test]
    fn evidence_names_real_messages_that_carry_the_answer() {
        let w = world(11);
        let by_id: HashMap<&str, &Message> = w.messages().map(|m| (m.id.as_str(), m)).collect();
        assert_eq!(by_id.len(), w.messages().count(), "message ids are unique");
        for q in &w.questions {
            assert!(!q.evidence.is_empty());
            for e in &q.evidence {
                let m = by_id
                    .get(e.as_str())
                    .unwrap_or_else(|| panic!("{e} is not a message"));
                assert!(
                    matches!(
                        m.kind,
                        MessageKind::Fact { .. } | MessageKind::Update { .. }
                    ),
                    "{e} carries no fact"
                );
            }
        }
    }

    #[test]
    fn update_chains_move_forward_in_time() {
        let w = world(5);
        let order: HashMap<&str, usize> = w
            .messages()
            .enumerate()
            .map(|(i, m)| (m.id.as_str(), i))
            .collect();
        let mut updated = 0;
        for f in &w.facts {
            assert!(!f.values.is_empty());
            for pair in f.values.windows(2) {
                assert!(order[pair[0].message.as_str()] < order[pair[1].message.as_str()]);
                assert!(
                    pair[0].date <= pair[1].date,
                    "{} then {}",
                    pair[0].date,
                    pair[1].date
                );
                assert_ne!(pair[0].value, pair[1].value);
                updated += 1;
            }
        }
        assert!(updated > 0, "some facts change");
    }

    #[test]
    fn temporal_answers_are_dates_before_or_on_their_session() {
        let w = world(9);
        let session_date: HashMap<&str, &str> = w
            .sessions
            .iter()
            .flat_map(|s| {
                s.messages
                    .iter()
                    .map(move |m| (m.id.as_str(), s.date.as_str()))
            })
            .collect();
        for q in w
            .questions
            .iter()
            .filter(|q| q.kind == QuestionKind::Temporal)
        {
            assert!(
                memtrace_engine::check_timestamp(&q.gold).is_ok(),
                "{}",
                q.gold
            );
            assert!(q.gold.as_str() <= session_date[q.evidence[0].as_str()]);
        }
    }

    #[test]
    fn plain_matching_is_not_enough() {
        // Some fact messages say their value through a synonym, so the
        // canonical answer does not occur in them.
        let found = (0..10).any(|seed| {
            let w = world(seed);
            let hidden = w.messages().any(|m| match m.kind {
                MessageKind::Fact { fact, value } | MessageKind::Update { fact, value } => {
                    !m.text.contains(&w.facts[fact].values[value].value)
                }
                _ => false,
            });
            hidden
        });
        assert!(found);
    }

    #[test]
    fn civil_dates_round_trip() {
        for d in [-1000, 0, 1, 19_000, 19_723, 20_000, 30_000] {
            let s = memtrace_engine::civil_from_days(d);
            let (y, rest) = s.split_at(4);
            let m: i64 = rest[1..3].parse().unwrap();
            let day: i64 = rest[4..6].parse().unwrap();
            assert_eq!(days_from_civil(y.parse().unwrap(), m, day), d, "{s}");
        }
        assert_eq!(memtrace_engine::civil_from_days(0), "1970-01-01");
        assert_eq!(memtrace_engine::civil_from_days(19_723), "2024-01-01");
    }
}
