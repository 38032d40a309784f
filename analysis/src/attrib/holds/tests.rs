use super::*;
use crate::attrib::model::test_model;
use serde_json::json;

const WRAP: &str = "\nTimestamp: 2023-05-08T13:56:00";

fn msg(who: &str, text: &str) -> String {
    format!("Speaker {who} says: {text}{WRAP}")
}

/// A model of rows built at run time (name, category, value, metadata).
fn owned_model(vars: &[(String, &str, String, serde_json::Value)]) -> TraceModel {
    let refs: Vec<(&str, &str, &str, serde_json::Value)> = vars
        .iter()
        .map(|(n, c, v, m)| (n.as_str(), *c, v.as_str(), m.clone()))
        .collect();
    test_model(&refs)
}

/// A trace of three messages and the values to test against them.
fn trace(values: &[&str]) -> TraceModel {
    let a = msg(
        "Caroline",
        "Hey Mel! I went to a LGBTQ support group yesterday and it was so powerful. How are you?",
    );
    let b = msg(
        "Melanie",
        "Wow, that's cool! I painted a lake sunrise last year, it is special to me.",
    );
    let c = msg(
        "Caroline",
        "I went to a LGBTQ support group yesterday with my friends Anna and Ben from work.",
    );
    let meta = |w: &str| json!({"speakers": w, "speaker_tag": "x"});
    let mut vars: Vec<(String, &str, String, serde_json::Value)> = vec![
        ("message:D1:1".into(), "message", a, meta("Caroline")),
        ("message:D1:2".into(), "message", b, meta("Melanie")),
        ("message:D1:3".into(), "message", c, meta("Caroline")),
    ];
    for (i, v) in values.iter().enumerate() {
        vars.push((
            format!("unit:{i}"),
            "memory_entry",
            v.to_string(),
            json!({}),
        ));
    }
    owned_model(&vars)
}

fn asked(m: &Matcher<'_>, q: &str) -> Vec<u32> {
    m.content(q)
}

#[test]
fn the_item_is_the_sentence_the_question_points_to() {
    let model = trace(&[]);
    let m = Matcher::new(&model);
    let it = m
        .item(
            0,
            &asked(
                &m,
                "When did Caroline go to the LGBTQ support group? 7 May 2023",
            ),
        )
        .expect("an item");
    assert_eq!(
        it.text,
        "I went to a LGBTQ support group yesterday and it was so powerful."
    );
    assert!(!it.whole);
    // Nothing points anywhere: the whole message.
    let it = m.item(0, &asked(&m, "Which colour?")).expect("an item");
    assert!(it.whole);
}

#[test]
fn a_third_person_rewrite_holds_and_a_truncation_does_not() {
    let model = trace(&[
        "{\"episode\": \"On 8 May 2023 Caroline said that she went to an LGBTQ support group yesterday and it was so powerful.\"}",
        "['Caroline: I went to a LGBTQ ...']",
    ]);
    let m = Matcher::new(&model);
    let it = m
        .item(
            0,
            &asked(&m, "When did Caroline go to the LGBTQ support group?"),
        )
        .expect("an item");
    assert!(m.holds(3, &it));
    assert!(!m.holds(4, &it));
    // A message holds itself and never another's item.
    assert!(m.holds(0, &it));
    assert!(!m.holds(2, &it));
}

#[test]
fn words_scattered_over_a_long_value_do_not_hold_a_sentence() {
    let filler = "and then they talked about many other topics for a long while ".repeat(6);
    let scattered = format!(
        "Caroline went shopping. {filler} The group met. {filler} It was powerful. {filler} \
         Support matters. {filler} LGBTQ rights came up. {filler} yesterday was busy."
    );
    let model = trace(&[&scattered]);
    let m = Matcher::new(&model);
    let it = m
        .item(
            0,
            &asked(&m, "When did Caroline go to the LGBTQ support group?"),
        )
        .expect("an item");
    assert!(!m.holds(3, &it));
}

#[test]
fn a_window_that_another_message_explains_better_is_that_messages() {
    // Message 3 says most of what message 1 says, and more; a value
    // holding only message 3's sentence does not hold message 1's item.
    let model = trace(&[
        "Caroline: I went to a LGBTQ support group yesterday with my friends Anna and Ben from work.",
        "Caroline: I went to a LGBTQ support group yesterday, so powerful. Then work.",
    ]);
    let m = Matcher::new(&model);
    let it = m
        .item(0, &asked(&m, "Was the support group powerful?"))
        .expect("an item");
    assert!(!m.holds(3, &it));
    assert!(m.holds(4, &it));
}

#[test]
fn a_rewrite_that_swapped_what_the_sentence_was_about_does_not_hold() {
    let model = test_model(&[
        (
            "message:D1:1",
            "message",
            "'Melanie: I painted a lake sunrise at the old harbour last year, it is special to me.'",
            json!({"speaker": "Melanie"}),
        ),
        (
            "fact:1",
            "memory_entry",
            "'Melanie painted a lake sunrise at the old harbour last year, special to her.'",
            json!({}),
        ),
        (
            "fact:2",
            "memory_entry",
            "'Melanie painted a forest sunset at the old harbour last year, special to her.'",
            json!({}),
        ),
    ]);
    let m = Matcher::new(&model);
    let mut it = m
        .item(
            0,
            &asked(&m, "What did Melanie paint last year? a lake sunrise"),
        )
        .expect("an item");
    it.value = m.content("a lake sunrise");
    assert!(m.holds(1, &it));
    // Most of the sentence is there, but not what it was about.
    assert!(!m.holds(2, &it));
}

#[test]
fn a_greeting_and_an_aside_are_not_what_a_store_must_keep() {
    let model = test_model(&[
        (
            "message:D1:1",
            "message",
            "'Gina: Hey Jon! Nothing beats pho for me.'",
            json!({"speaker": "Gina"}),
        ),
        (
            "message:D1:2",
            "message",
            "'Jon: My favourite way to unwind is bouldering at the gym. It still feels a bit unreal.'",
            json!({"speaker": "Jon"}),
        ),
        (
            "fact:1",
            "memory_entry",
            "'Gina said that nothing beats pho for them.'",
            json!({}),
        ),
        (
            "fact:2",
            "memory_entry",
            "'Jon said that their favourite way to unwind is bouldering at the gym.'",
            json!({}),
        ),
    ]);
    let m = Matcher::new(&model);
    let pho = m
        .item(0, &asked(&m, "What is Gina's favorite food?"))
        .expect("an item");
    assert!(m.holds(2, &pho), "{pho:?}");
    // Nothing points anywhere (the answer says "rock climbing"): the
    // message is held where its one telling sentence is.
    let climb = m
        .item(1, &asked(&m, "What is Jon's main hobby? rock climbing"))
        .expect("an item");
    assert!(climb.whole);
    assert!(m.holds(3, &climb), "{climb:?}");
    assert!(!m.holds(2, &climb));
}

#[test]
fn a_name_that_starts_the_next_line_does_not_claim_an_answer_word() {
    let line = |who: &str, text: &str| format!("{who}: {text}");
    let said = [
        (
            "Caroline",
            "Thanks for asking! I spend most weekends birdwatching.",
        ),
        (
            "Evan",
            "Funny, a friend from school has birdwatching as hobby too... or was it?",
        ),
        ("Caroline", "Ugh, Mondays."),
        ("Caroline", "Haha, that sounds great!"),
        (
            "Evan",
            "The weather has been wild this week, storms every night.",
        ),
    ];
    let filler = [said[4], said[4], said[4]]
        .map(|(w, t)| line(w, t))
        .join("\n");
    let lost = format!(
        "'{filler}\n{}\n{}\n{}\n{filler}'",
        line(said[2].0, said[2].1),
        line(said[1].0, said[1].1),
        line(said[3].0, said[3].1)
    );
    let kept = format!("'{filler}\n{}\n{filler}'", line(said[0].0, said[0].1));
    let mut vars: Vec<(String, &str, String, serde_json::Value)> = said
        .iter()
        .enumerate()
        .map(|(i, (w, t))| {
            (
                format!("message:D1:{i}"),
                "message",
                format!("'{}'", line(w, t)),
                json!({ "speaker": w }),
            )
        })
        .collect();
    vars.push(("memory:context".into(), "memory_entry", lost, json!({})));
    vars.push(("memory:kept".into(), "memory_entry", kept, json!({})));
    let model = owned_model(&vars);
    let m = Matcher::new(&model);
    let mut it = m
        .item(0, &asked(&m, "What is Caroline's main hobby? birdwatching"))
        .expect("an item");
    it.value = m.content("birdwatching");
    it.asked = m.content("What is Caroline's main hobby?");
    assert!(!m.holds(5, &it), "{it:?}");
    assert!(m.holds(6, &it), "{it:?}");
}

#[test]
fn a_small_fact_holds_the_answer_with_the_speaker() {
    let model = trace(&["'Melanie painted a sunrise over a lake in 2022'"]);
    let m = Matcher::new(&model);
    let mut it = m
        .item(1, &asked(&m, "What did Melanie paint? a lake sunrise"))
        .expect("an item");
    it.value = m.content("a lake sunrise");
    assert!(m.holds(3, &it));
    it.value = m.content("a forest at night");
    assert!(!m.holds(3, &it));
}
