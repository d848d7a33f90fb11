"""Messages written blind to the Archivist's rule (a fourth split: never used for tuning)."""

from __future__ import annotations

FRESH2: list[tuple[str, bool]] = [
    # --- True: durable facts about the writer or their community ---
    # language-learning server
    ("hey so im a native portuguese speaker, been learning japanese for about 2 years now", True),
    ("btw i live in osaka so im on JST, dont ping me after midnight my time", True),
    ("pls always give me the romaji under the kana, i still cant read kanji well", True),
    ("we decided the spanish conversation hour is every thursday at 7pm CET now", True),
    ("moved to lyon last month for work so ill finally get to practice french irl", True),
    # open-source project
    ("ok so for the record we're dropping python 3.8 support starting with v2.0", True),
    ("im the maintainer for the windows build, anything msi related goes to me", True),
    ("lets use conventional commits from now on, no more 'fix stuff' messages", True),
    ("release freeze is march 14, nothing gets merged after that except bugfixes", True),
    ("we run CI on github actions and the docs live on readthedocs", True),
    ("can you summarize this PR for me, im the reviewer on all the parser stuff so i need the details", True),
    # D&D group
    ("our session is every other sunday at 3pm EST, 4 hours max", True),
    ("i play a tiefling warlock named Vex in the main campaign", True),
    ("house rule: crits are max damage + roll, no double dice", True),
    ("yo bot im the DM for the wednesday group, so spoilers are fine with me", True),
    ("lets cap the campaign at level 12, we all agreed last session", True),
    # small online shop staff server
    ("we ship only within the EU, no UK since the customs mess", True),
    ("marketing budget is 300 eur a month, dont suggest anything over that", True),
    ("reminder for everyone: returns window is 30 days now, not 14 anymore", True),
    ("i handle customer emails mon-wed, jonas does thu-fri", True),
    ("we use shopify + printful for the mugs", True),
    ("black friday sale starts nov 29, 20% off everything except the candles", True),
    # university study group
    ("im a 2nd year chem eng student at TU delft", True),
    ("our group meets in library room 3.14 every tuesday after the stats lecture", True),
    ("organic chem final is on june 6th btw", True),
    ("can u quiz me on thermo, i have adhd so keep the questions short pls", True),
    ("we split it: maya does the lit review, i do methods, tom does the slides", True),
    # fitness community
    ("i have a bad left knee so no jump squats or lunges for me", True),
    ("im vegetarian, been for like 6 years", True),
    ("started a new job at a warehouse so i can only train mornings now", True),
    ("trying to hit 140g protein a day, im 75kg", True),
    ("our group challenge this month is 10k steps daily, leaderboard resets on the 1st", True),
    # music production server
    ("i produce in ableton 11 on a mac, mostly lofi and some dnb, so no fl studio tips pls", True),
    ("dont use emojis when you answer me pls, i find them distracting", True),
    ("beat battle is every friday, 2 hour limit, samples get posted at 8pm utc", True),
    ("just bought a pair of hs5s so mix advice can assume i have monitors now", True),
    # parents' group
    ("my daughter is 3 and allergic to peanuts", True),
    ("we have twins, 8 months old, both started daycare last week", True),
    ("i work night shifts as a nurse so im usually up at 4am lol", True),
    ("playdate meetup is the first saturday of every month at riverside park", True),
    # --- False: requests, questions, small talk, reactions, momentary states ---
    # language-learning server
    ("ok so how do i ask someone out in spanish without sounding weird", False),
    ("whats the difference between ser and estar again", False),
    ("lol that example sentence was so unhinged", False),
    ("translate this for me: je ne sais pas quoi faire ce soir", False),
    ("im so sleepy rn i cant focus on flashcards", False),
    ("is 'tener ganas de' formal or casual?", False),
    ("ok that explanation made zero sense tbh", False),
    ("brb my tea is ready", False),
    # open-source project
    ("can you explain what this stack trace means", False),
    ("write me a regex that matches semver strings", False),
    ("ugh ci is red again, waiting for it to rerun", False),
    ("do you think we should switch to ruff?", False),
    ("thanks that fixed it!!", False),
    ("lmaooo the bot just roasted my code", False),
    ("im reviewing the big refactor PR right now, wish me luck", False),
    ("should i squash before merging or nah", False),
    # D&D group
    ("give me a name for a grumpy dwarf blacksmith", False),
    ("roll 4d6 drop lowest x6", False),
    ("does sneak attack work with a thrown dagger?", False),
    ("hahaha the goblin voice tonight was perfect", False),
    ("that's not how grapple works in 5e, you got it wrong", False),
    ("hey bot", False),
    ("what should my bard do if the party splits up", False),
    ("im nervous about tonights session ngl", False),
    # small online shop staff server
    ("draft a reply to a customer whose parcel got lost", False),
    ("how should i word a discount code announcement?", False),
    ("printer jammed again, gonna be a while", False),
    ("can you make that shorter and less salesy", False),
    ("is it normal for etsy fees to be this high?", False),
    ("good morning team ☀️", False),
    ("i think i packed the wrong color for order 4412 ugh", False),
    ("what's a good subject line for an abandoned cart email", False),
    # university study group
    ("explain le chatelier like im 5", False),
    ("can you check if my answer to q3 is right: ΔG = -nFE", False),
    ("im in the library rn, its packed", False),
    ("who even invented partial derivatives smh", False),
    ("nvm i figured it out", False),
    ("when i integrate by parts do i always pick u as the log?", False),
    ("wait why did you use the ideal gas law there?", False),
    ("pulling an all nighter tonight send help", False),
    # fitness community
    ("is creatine safe to take every day?", False),
    ("give me a 20 min hiit workout, no equipment", False),
    ("just finished leg day and i can't feel my legs lol", False),
    ("how many calories in a big mac", False),
    ("i feel like skipping the gym today tbh", False),
    ("that plan looks way too intense for a beginner", False),
    ("should i do cardio before or after weights?", False),
    # music production server
    ("how do i sidechain a bass to the kick in ableton", False),
    ("suggest some chord progressions that sound sad but hopeful", False),
    ("my mix sounds muddy, any tips?", False),
    ("bounced the track, listening back now", False),
    ("yo that progression you gave me slaps", False),
    ("what bpm is usually used for dnb?", False),
    # parents' group
    ("how do i get a toddler to eat veggies", False),
    ("baby finally asleep, i have maybe 20 min of peace lol", False),
    ("any ideas for a rainy day indoor activity?", False),
    ("omg thank you, this list is a lifesaver", False),
    ("is it normal for a 2 year old to bite?", False),
    ("im so hungry rn and the kids ate all the snacks", False),
    ("waiting at the pediatrician, theyre running 40 mins late", False),
]
