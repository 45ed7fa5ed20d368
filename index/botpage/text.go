package botpage

import "github.com/lohisoft/crawl-operator/index/i18n"

// text is the wording of the bot page in one language. It holds no facts:
// every name, address, number and string the page states comes from the
// Identity or the cluster and is put in by the template, through the %
// verbs noted on each field.
type text struct {
	i18n.Language

	Title       string // %[1]s product token, %[2]s operator
	Intro       string // %[1]s product token, %[2]s operator (not at a sentence end: it may end in a dot)
	AtAGlance   string
	UserAgent   string
	SourceIPs   string
	Hostnames   string
	Budget      string
	BudgetValue string // %d pages
	Contact     string

	OperatorHeading string
	Operator        string

	PurposeHeading string
	Purpose        string // %s operator
	NotPurpose     string

	StoredHeading string
	StoredIntro   string
	StoredFields  [5]string // title, description, headings, URL, link texts

	NotStoredHeading string
	NotStored        string
	PointsTheWay     string

	BudgetHeading string
	BudgetText    string // %d pages

	EtiquetteHeading string
	Etiquette        [4]string // robots.txt, one request at a time, back-off, no bypassing

	BlockHeading  string
	BlockRobots   string
	BlockByEmail  string // %s contact
	BlockRemoval  string
	VerifyHeading string

	UAHeading    string
	UACurrent    string
	UAOther      string
	UATransition string

	IPHeading   string
	IPIntro     string
	NoIPs       string
	NoIPv6      string
	IPList      string
	IPListTerms string

	FCrDNSHeading string
	FCrDNSIntro   string
	FCrDNSSteps   [3]string // [0]: %s suffix; [1], [2] no verbs
	FCrDNSBare    string    // %[1]s suffix, %[2]s bare domain

	HostnamesHeading string
	NotVerified      string
	Example          string

	LanguagesHeading string
	QuestionsHeading string
	Questions        string
}

var english = text{
	Language: i18n.English,

	Title:       "%[1]s, the web crawler of %[2]s",
	Intro:       "%[1]s is the web crawler that %[2]s runs. This page says what it does, how to recognise it and how to keep it off your site.",
	AtAGlance:   "In short",
	UserAgent:   "User-agent",
	SourceIPs:   "Source addresses",
	Hostnames:   "Hostnames",
	Budget:      "Budget",
	BudgetValue: "at most %d pages per site",
	Contact:     "Contact",

	OperatorHeading: "Who runs it",
	Operator:        "Operator",

	PurposeHeading: "What it is for",
	Purpose:        "It gathers what the search index of %s needs to point people to your pages.",
	NotPurpose:     "It does not collect training data for AI models and does not copy content to publish it elsewhere.",

	StoredHeading: "What it keeps",
	StoredIntro:   "Of each page it keeps only:",
	StoredFields: [5]string{
		"the title",
		"the meta description",
		"the h1, h2 and h3 headings",
		"the URL",
		"the text of links that point to the page",
	},

	NotStoredHeading: "What it never keeps",
	NotStored:        "The text content of your pages is not stored anywhere.",
	PointsTheWay:     "The index shows the way rather than giving the answer: every search result links back to your page.",

	BudgetHeading: "How much it fetches",
	BudgetText:    "At most %d pages per site in each crawl, sitemap requests included. The pages your sitemap ranks highest come first (the sitemaps your robots.txt names, else /sitemap.xml), then links.",

	EtiquetteHeading: "How it behaves",
	Etiquette: [4]string{
		"It follows robots.txt as RFC 9309 specifies.",
		"It sends one request at a time to a host and pauses between requests.",
		"After an HTTP 429 or 5xx answer it backs off and respects Retry-After.",
		"It never gets around logins, paywalls or bot protection.",
	},

	BlockHeading:  "How to block it",
	BlockRobots:   "Add these lines to your robots.txt:",
	BlockByEmail:  "Or ask for your domain to be excluded by writing to %s.",
	BlockRemoval:  "An excluded domain is taken off the crawl list and its pages are deleted from the index.",
	VerifyHeading: "How to recognise it",

	UAHeading:    "User-agent strings",
	UACurrent:    "Sent now:",
	UAOther:      "Also genuine:",
	UATransition: "The older form is being replaced; until the change is complete, either may appear in your logs.",

	IPHeading:   "Source addresses",
	IPIntro:     "It fetches pages only from these IPv4 addresses:",
	NoIPs:       "No crawler address is active at the moment.",
	NoIPv6:      "It makes no requests over IPv6.",
	IPList:      "The same list, machine-readable for firewalls and WAFs:",
	IPListTerms: "It is served as application/json, without authentication and without redirects.",

	FCrDNSHeading: "Checking with forward-confirmed reverse DNS",
	FCrDNSIntro:   "This is the most reliable check. It does not depend on the list above, so it stays right when the crawler moves to other machines.",
	FCrDNSSteps: [3]string{
		"Look up the reverse DNS (PTR) name of the address the request came from. It must end in %s.",
		"Look up the addresses of that name. They must include exactly the address the request came from.",
		"If either step fails, the request was not ours, and you may block it.",
	},
	FCrDNSBare: "Match the whole suffix %[1]s, not just %[2]s: that domain also covers other servers, such as web and mail servers.",

	HostnamesHeading: "Crawler hostnames",
	NotVerified:      "not verified",
	Example:          "Example",

	LanguagesHeading: "This page in other languages",
	QuestionsHeading: "Questions",
	Questions:        "Anything unclear, or want your domain left alone? Write to us.",
}

var dutch = text{
	Language: i18n.Dutch,

	Title:       "%[1]s, de webcrawler van %[2]s",
	Intro:       "%[1]s is de webcrawler die %[2]s beheert. Op deze pagina leest u wat hij doet, hoe u hem herkent en hoe u hem van uw site weert.",
	AtAGlance:   "In het kort",
	UserAgent:   "User-agent",
	SourceIPs:   "Bronadressen",
	Hostnames:   "Hostnamen",
	Budget:      "Budget",
	BudgetValue: "hoogstens %d pagina's per site",
	Contact:     "Contact",

	OperatorHeading: "Wie hem beheert",
	Operator:        "Beheerder",

	PurposeHeading: "Waarvoor hij dient",
	Purpose:        "Hij verzamelt wat de zoekindex van %s nodig heeft om mensen naar uw pagina's te verwijzen.",
	NotPurpose:     "Hij verzamelt geen trainingsdata voor AI-modellen en kopieert geen inhoud om die elders te publiceren.",

	StoredHeading: "Wat hij bewaart",
	StoredIntro:   "Van elke pagina bewaart hij alleen:",
	StoredFields: [5]string{
		"de titel",
		"de metabeschrijving",
		"de koppen h1, h2 en h3",
		"de URL",
		"de tekst van links die naar de pagina verwijzen",
	},

	NotStoredHeading: "Wat hij nooit bewaart",
	NotStored:        "De tekstinhoud van uw pagina's wordt nergens opgeslagen.",
	PointsTheWay:     "De index wijst de weg in plaats van het antwoord te geven: elk zoekresultaat linkt terug naar uw pagina.",

	BudgetHeading: "Hoeveel hij ophaalt",
	BudgetText:    "Hoogstens %d pagina's per site per crawl, verzoeken om de sitemap inbegrepen. De pagina's die uw sitemap het hoogst rangschikt komen eerst (de sitemaps die uw robots.txt noemt, anders /sitemap.xml), daarna links.",

	EtiquetteHeading: "Hoe hij zich gedraagt",
	Etiquette: [4]string{
		"Hij volgt robots.txt zoals RFC 9309 het voorschrijft.",
		"Hij stuurt één verzoek tegelijk naar een host en wacht tussen twee verzoeken.",
		"Na een HTTP-antwoord 429 of 5xx neemt hij gas terug en houdt hij zich aan Retry-After.",
		"Hij omzeilt nooit logins, betaalmuren of botbeveiliging.",
	},

	BlockHeading:  "Hoe u hem blokkeert",
	BlockRobots:   "Zet deze regels in uw robots.txt:",
	BlockByEmail:  "Of vraag uitsluiting van uw domein aan door te schrijven naar %s.",
	BlockRemoval:  "Een uitgesloten domein gaat van de crawllijst en de pagina's ervan worden uit de index verwijderd.",
	VerifyHeading: "Hoe u hem herkent",

	UAHeading:    "User-agentstrings",
	UACurrent:    "Nu in gebruik:",
	UAOther:      "Ook echt:",
	UATransition: "De oudere vorm wordt vervangen; zolang de overgang duurt, kunt u beide in uw logs zien.",

	IPHeading:   "Bronadressen",
	IPIntro:     "Hij haalt pagina's uitsluitend op vanaf deze IPv4-adressen:",
	NoIPs:       "Op dit moment is er geen crawleradres actief.",
	NoIPv6:      "Hij doet geen verzoeken via IPv6.",
	IPList:      "Dezelfde lijst, machineleesbaar voor firewalls en WAF's:",
	IPListTerms: "Ze wordt geserveerd als application/json, zonder authenticatie en zonder omleidingen.",

	FCrDNSHeading: "Controle met forward-confirmed reverse DNS",
	FCrDNSIntro:   "Dit is de betrouwbaarste controle. Ze hangt niet af van de lijst hierboven en klopt dus ook nog als de crawler naar andere machines verhuist.",
	FCrDNSSteps: [3]string{
		"Zoek de reverse-DNS-naam (PTR) op van het adres waar het verzoek vandaan kwam. Die moet eindigen op %s.",
		"Zoek de adressen van die naam op. Daar moet precies het adres bij zitten waar het verzoek vandaan kwam.",
		"Mislukt een van beide stappen, dan kwam het verzoek niet van ons en mag u het blokkeren.",
	},
	FCrDNSBare: "Controleer op het volledige achtervoegsel %[1]s, niet alleen op %[2]s: dat domein omvat ook andere servers, zoals web- en mailservers.",

	HostnamesHeading: "Hostnamen van de crawler",
	NotVerified:      "niet geverifieerd",
	Example:          "Voorbeeld",

	LanguagesHeading: "Deze pagina in andere talen",
	QuestionsHeading: "Vragen",
	Questions:        "Is iets onduidelijk, of wilt u dat uw domein met rust gelaten wordt? Schrijf ons.",
}

var slovak = text{
	Language: i18n.Slovak,

	Title:       "%[1]s, webový prehľadávač spoločnosti %[2]s",
	Intro:       "Spoločnosť %[2]s prevádzkuje webový prehľadávač %[1]s. Na tejto stránke sa dozviete, čo robí, ako ho spoznáte a ako ho udržíte mimo svojho webu.",
	AtAGlance:   "Stručne",
	UserAgent:   "User-agent",
	SourceIPs:   "Zdrojové adresy",
	Hostnames:   "Názvy hostiteľov",
	Budget:      "Rozpočet",
	BudgetValue: "najviac %d stránok na web",
	Contact:     "Kontakt",

	OperatorHeading: "Kto ho prevádzkuje",
	Operator:        "Prevádzkovateľ",

	PurposeHeading: "Na čo slúži",
	Purpose:        "Zbiera to, čo vyhľadávací index spoločnosti %s potrebuje, aby ľudí nasmeroval na vaše stránky.",
	NotPurpose:     "Nezbiera trénovacie dáta pre modely umelej inteligencie a nekopíruje obsah, aby ho zverejnil inde.",

	StoredHeading: "Čo si uchováva",
	StoredIntro:   "Z každej stránky si uchováva iba:",
	StoredFields: [5]string{
		"názov (title)",
		"meta popis",
		"nadpisy h1, h2 a h3",
		"URL adresu",
		"text odkazov, ktoré na stránku smerujú",
	},

	NotStoredHeading: "Čo si nikdy neuchováva",
	NotStored:        "Textový obsah vašich stránok sa nikde neukladá.",
	PointsTheWay:     "Index ukazuje cestu, odpoveď nedáva: každý výsledok vyhľadávania odkazuje späť na vašu stránku.",

	BudgetHeading: "Koľko toho stiahne",
	BudgetText:    "Najviac %d stránok z jedného webu pri každom prehľadávaní, vrátane požiadaviek na sitemap. Najprv prídu stránky, ktoré vaša sitemap radí najvyššie (sitemapy uvedené vo vašom robots.txt, inak /sitemap.xml), potom odkazy.",

	EtiquetteHeading: "Ako sa správa",
	Etiquette: [4]string{
		"Riadi sa súborom robots.txt podľa RFC 9309.",
		"Na jedného hostiteľa posiela naraz iba jednu požiadavku a medzi požiadavkami robí prestávky.",
		"Po odpovedi HTTP 429 alebo 5xx spomalí a rešpektuje hlavičku Retry-After.",
		"Nikdy neobchádza prihlásenie, platobné brány ani ochranu proti botom.",
	},

	BlockHeading:  "Ako ho zablokovať",
	BlockRobots:   "Pridajte do svojho súboru robots.txt tieto riadky:",
	BlockByEmail:  "Alebo požiadajte o vylúčenie svojej domény na adrese %s.",
	BlockRemoval:  "Vylúčená doména sa vyradí zo zoznamu na prehľadávanie a jej stránky sa z indexu vymažú.",
	VerifyHeading: "Ako ho spoznáte",

	UAHeading:    "Reťazce user-agent",
	UACurrent:    "Používa sa teraz:",
	UAOther:      "Tiež pravý:",
	UATransition: "Staršia podoba sa postupne nahrádza; kým zmena neskončí, môžete v záznamoch vidieť obe.",

	IPHeading:   "Zdrojové adresy",
	IPIntro:     "Stránky sťahuje výlučne z týchto adries IPv4:",
	NoIPs:       "Momentálne nie je aktívna žiadna adresa prehľadávača.",
	NoIPv6:      "Cez IPv6 neposiela žiadne požiadavky.",
	IPList:      "Ten istý zoznam v strojovo čitateľnej podobe pre firewally a WAF:",
	IPListTerms: "Poskytuje sa ako application/json, bez overovania a bez presmerovaní.",

	FCrDNSHeading: "Overenie pomocou forward-confirmed reverse DNS",
	FCrDNSIntro:   "Toto je najspoľahlivejšie overenie. Nezávisí od zoznamu vyššie, takže platí, aj keď sa prehľadávač presunie na iné stroje.",
	FCrDNSSteps: [3]string{
		"Zistite reverzný DNS názov (PTR) adresy, z ktorej požiadavka prišla. Musí končiť na %s.",
		"Zistite adresy tohto názvu. Musí medzi nimi byť presne tá adresa, z ktorej požiadavka prišla.",
		"Ak niektorý krok zlyhá, požiadavka nebola od nás a môžete ju zablokovať.",
	},
	FCrDNSBare: "Porovnávajte celú príponu %[1]s, nie iba %[2]s: tá doména zahŕňa aj iné servery, napríklad webové a poštové.",

	HostnamesHeading: "Názvy hostiteľov prehľadávača",
	NotVerified:      "neoverené",
	Example:          "Príklad",

	LanguagesHeading: "Táto stránka v iných jazykoch",
	QuestionsHeading: "Otázky",
	Questions:        "Je niečo nejasné alebo chcete, aby sa vaša doména neprehľadávala? Napíšte nám.",
}

var bulgarian = text{
	Language: i18n.Bulgarian,

	Title:       "%[1]s, уеб роботът на %[2]s",
	Intro:       "Компанията %[2]s управлява уеб робота %[1]s. Тази страница обяснява какво прави той, как да го разпознаете и как да го държите далеч от сайта си.",
	AtAGlance:   "Накратко",
	UserAgent:   "User-agent",
	SourceIPs:   "Адреси на източника",
	Hostnames:   "Имена на хостове",
	Budget:      "Лимит",
	BudgetValue: "най-много %d страници на сайт",
	Contact:     "Контакт",

	OperatorHeading: "Кой го управлява",
	Operator:        "Оператор",

	PurposeHeading: "За какво служи",
	Purpose:        "Той събира това, от което търсещият индекс на %s има нужда, за да насочва хората към вашите страници.",
	NotPurpose:     "Той не събира данни за обучение на модели с изкуствен интелект и не копира съдържание, за да го публикува другаде.",

	StoredHeading: "Какво запазва",
	StoredIntro:   "От всяка страница запазва само:",
	StoredFields: [5]string{
		"заглавието",
		"мета описанието",
		"заглавията h1, h2 и h3",
		"URL адреса",
		"текста на връзките, които сочат към страницата",
	},

	NotStoredHeading: "Какво никога не запазва",
	NotStored:        "Текстовото съдържание на вашите страници не се съхранява никъде.",
	PointsTheWay:     "Индексът показва пътя, а не дава отговора: всеки резултат от търсенето води обратно към вашата страница.",

	BudgetHeading: "Колко изтегля",
	BudgetText:    "Най-много %d страници от един сайт при всяко обхождане, включително заявките за sitemap. Първо идват страниците, които вашият sitemap поставя най-високо (посочените във вашия robots.txt, иначе /sitemap.xml), след това връзките.",

	EtiquetteHeading: "Как се държи",
	Etiquette: [4]string{
		"Спазва robots.txt според RFC 9309.",
		"Изпраща само по една заявка наведнъж към даден хост и прави пауза между заявките.",
		"След отговор HTTP 429 или 5xx забавя темпото и се съобразява с Retry-After.",
		"Никога не заобикаля входове с парола, платени зони или защита срещу ботове.",
	},

	BlockHeading:  "Как да го блокирате",
	BlockRobots:   "Добавете тези редове в своя robots.txt:",
	BlockByEmail:  "Или поискайте изключване на домейна си, като пишете на %s.",
	BlockRemoval:  "Изключеният домейн се премахва от списъка за обхождане, а страниците му се изтриват от индекса.",
	VerifyHeading: "Как да го разпознаете",

	UAHeading:    "Низове user-agent",
	UACurrent:    "Използва се сега:",
	UAOther:      "Също истински:",
	UATransition: "По-старата форма постепенно се заменя; докато смяната приключи, в журналите си може да видите и двете.",

	IPHeading:   "Адреси на източника",
	IPIntro:     "Изтегля страници само от тези IPv4 адреси:",
	NoIPs:       "В момента няма активен адрес на робота.",
	NoIPv6:      "Не изпраща заявки през IPv6.",
	IPList:      "Същият списък в машинночетим вид за защитни стени и WAF:",
	IPListTerms: "Предоставя се като application/json, без удостоверяване и без пренасочвания.",

	FCrDNSHeading: "Проверка чрез forward-confirmed reverse DNS",
	FCrDNSIntro:   "Това е най-надеждната проверка. Тя не зависи от списъка по-горе, затова остава вярна и когато роботът се премести на други машини.",
	FCrDNSSteps: [3]string{
		"Потърсете обратното DNS име (PTR) на адреса, от който е дошла заявката. То трябва да завършва на %s.",
		"Потърсете адресите на това име. Сред тях трябва да е точно адресът, от който е дошла заявката.",
		"Ако някоя от стъпките не успее, заявката не е от нас и можете да я блокирате.",
	},
	FCrDNSBare: "Сравнявайте с целия суфикс %[1]s, а не само с %[2]s: този домейн обхваща и други сървъри, например уеб и пощенски.",

	HostnamesHeading: "Имена на хостовете на робота",
	NotVerified:      "непроверено",
	Example:          "Пример",

	LanguagesHeading: "Тази страница на други езици",
	QuestionsHeading: "Въпроси",
	Questions:        "Нещо не е ясно или искате домейнът ви да бъде оставен на мира? Пишете ни.",
}

var italian = text{
	Language: i18n.Italian,

	Title:       "%[1]s, il crawler web di %[2]s",
	Intro:       "%[2]s gestisce il crawler web %[1]s. Questa pagina spiega che cosa fa, come riconoscerlo e come tenerlo lontano dal vostro sito.",
	AtAGlance:   "In breve",
	UserAgent:   "User-agent",
	SourceIPs:   "Indirizzi di origine",
	Hostnames:   "Nomi host",
	Budget:      "Limite",
	BudgetValue: "al massimo %d pagine per sito",
	Contact:     "Contatto",

	OperatorHeading: "Chi lo gestisce",
	Operator:        "Gestore",

	PurposeHeading: "A che cosa serve",
	Purpose:        "Raccoglie ciò che serve all'indice di ricerca di %s per indirizzare le persone alle vostre pagine.",
	NotPurpose:     "Non raccoglie dati di addestramento per modelli di intelligenza artificiale e non copia contenuti per pubblicarli altrove.",

	StoredHeading: "Che cosa conserva",
	StoredIntro:   "Di ogni pagina conserva soltanto:",
	StoredFields: [5]string{
		"il titolo",
		"la meta description",
		"i titoli h1, h2 e h3",
		"l'URL",
		"il testo dei link che puntano alla pagina",
	},

	NotStoredHeading: "Che cosa non conserva mai",
	NotStored:        "Il contenuto testuale delle vostre pagine non viene memorizzato da nessuna parte.",
	PointsTheWay:     "L'indice indica la strada invece di dare la risposta: ogni risultato di ricerca rimanda alla vostra pagina.",

	BudgetHeading: "Quanto scarica",
	BudgetText:    "Al massimo %d pagine per sito a ogni scansione, comprese le richieste della sitemap. Prima vengono le pagine che la vostra sitemap mette più in alto (le sitemap indicate nel vostro robots.txt, altrimenti /sitemap.xml), poi i link.",

	EtiquetteHeading: "Come si comporta",
	Etiquette: [4]string{
		"Rispetta robots.txt come previsto dalla RFC 9309.",
		"Invia una sola richiesta alla volta a ciascun host e fa una pausa tra una richiesta e l'altra.",
		"Dopo una risposta HTTP 429 o 5xx rallenta e rispetta Retry-After.",
		"Non aggira mai login, paywall o protezioni anti-bot.",
	},

	BlockHeading:  "Come bloccarlo",
	BlockRobots:   "Aggiungete queste righe al vostro robots.txt:",
	BlockByEmail:  "Oppure chiedete l'esclusione del vostro dominio scrivendo a %s.",
	BlockRemoval:  "Un dominio escluso viene tolto dall'elenco delle scansioni e le sue pagine vengono cancellate dall'indice.",
	VerifyHeading: "Come riconoscerlo",

	UAHeading:    "Stringhe user-agent",
	UACurrent:    "In uso ora:",
	UAOther:      "Anch'essa autentica:",
	UATransition: "La forma più vecchia è in via di sostituzione; finché il passaggio non è concluso, nei log potete trovare l'una o l'altra.",

	IPHeading:   "Indirizzi di origine",
	IPIntro:     "Scarica le pagine esclusivamente da questi indirizzi IPv4:",
	NoIPs:       "Al momento non è attivo alcun indirizzo del crawler.",
	NoIPv6:      "Non effettua richieste via IPv6.",
	IPList:      "Lo stesso elenco in formato leggibile dalle macchine, per firewall e WAF:",
	IPListTerms: "Viene servito come application/json, senza autenticazione e senza reindirizzamenti.",

	FCrDNSHeading: "Verifica con forward-confirmed reverse DNS",
	FCrDNSIntro:   "È la verifica più affidabile. Non dipende dall'elenco qui sopra, quindi resta valida anche se il crawler si sposta su altre macchine.",
	FCrDNSSteps: [3]string{
		"Cercate il nome DNS inverso (PTR) dell'indirizzo da cui è arrivata la richiesta. Deve terminare con %s.",
		"Cercate gli indirizzi di quel nome. Tra questi deve esserci esattamente l'indirizzo da cui è arrivata la richiesta.",
		"Se uno dei due passaggi fallisce, la richiesta non era nostra e potete bloccarla.",
	},
	FCrDNSBare: "Confrontate l'intero suffisso %[1]s, non soltanto %[2]s: quel dominio comprende anche altri server, come quelli web e di posta.",

	HostnamesHeading: "Nomi host del crawler",
	NotVerified:      "non verificato",
	Example:          "Esempio",

	LanguagesHeading: "Questa pagina in altre lingue",
	QuestionsHeading: "Domande",
	Questions:        "Qualcosa non è chiaro o volete che il vostro dominio venga lasciato in pace? Scriveteci.",
}

// languages in the order of the language links; the first is the default.
var languages = []*text{&english, &dutch, &slovak, &bulgarian, &italian}
