package searchui

import "github.com/lohisoft/crawl-operator/index/i18n"

// text is the wording of the search pages in one language. Facts (numbers,
// hosts, queries) are put in by the template through the % verbs noted.
type text struct {
	i18n.Language

	SearchTitle  string
	NoPageText   string // the one line on what the index keeps
	SearchLabel  string
	SearchButton string
	ResultCount  string // %d results
	PageOf       string // %[1]d page, %[2]d pages
	Previous     string
	Next         string
	Capped       string // %d: how many ranked results are paged over
	NoResults    string // %s query
	NotALink     string // beside a result whose address is not a web address

	NavSearch    string
	NavSites     string
	NavBot       string
	LanguageMenu string

	SitesTitle   string
	SitesIntro   string
	SitesCount   string // %d sites
	SiteCol      string
	PagesCol     string
	LastCrawlCol string
	NextCrawlCol string
	StateCol     string
	PagesLink    string
	NotIndexed   string
	Unchanged    string // %d pages the site answered 304 Not Modified
	Received     string // %s: bytes the crawl received, formatted by Size
	NoTarget     string
	StateUnknown string
	Suspended    string
	Never        string
	NoSites      string

	HostTitle      string // %s host
	HostIntro      string
	Title          string
	Description    string
	Headings       string
	LinkTexts      string
	HTTPStatus     string
	Fetched        string
	None           string
	NothingIndexed string

	ErrorTitle      string
	ErrMalformed    string
	ErrRepeated     string // %s parameter
	ErrQueryMissing string
	ErrQueryTooLong string // %d bytes
	ErrQueryNotText string
	ErrBadQuery     string
	ErrBadPage      string // %d highest page
	ErrNoSuchPage   string // %[1]d page asked for, %[2]d pages there are
	ErrBadHost      string
	ErrHostUnknown  string // %s host
	ErrNotFound     string
	ErrMethod       string
	ErrUnavailable  string
	ErrInternal     string
	BackToSearch    string
}

var english = text{
	Language: i18n.English,

	SearchTitle:  "Search the LohiSoft index",
	NoPageText:   "The index keeps no page text: every result leads to the original page.",
	SearchLabel:  "Search for",
	SearchButton: "Search",
	ResultCount:  "%d results",
	PageOf:       "Page %[1]d of %[2]d",
	Previous:     "Previous",
	Next:         "Next",
	Capped:       "Only the best %d matches are shown; add words to narrow the search.",
	NoResults:    "No page matches %s.",
	NotALink:     "not a web address, so not a link",

	NavSearch:    "Search",
	NavSites:     "Crawled sites",
	NavBot:       "About the bot",
	LanguageMenu: "Language",

	SitesTitle:   "Crawled sites",
	SitesIntro:   "Every site in the index and every site the bot is asked to crawl. This page only shows the crawl; nothing here changes it.",
	SitesCount:   "%d sites",
	SiteCol:      "Site",
	PagesCol:     "Pages indexed",
	LastCrawlCol: "Last crawl",
	NextCrawlCol: "Next crawl",
	StateCol:     "State",
	PagesLink:    "pages",
	NotIndexed:   "not indexed yet",
	Unchanged:    "%d unchanged (304)",
	Received:     "%s received",
	NoTarget:     "no CrawlTarget the manager watches",
	StateUnknown: "The crawl state cannot be read right now; the index is shown alone.",
	Suspended:    "suspended",
	Never:        "never",
	NoSites:      "No site is indexed or to be crawled yet.",

	HostTitle:      "Pages of %s",
	HostIntro:      "What the index keeps of each page: nothing more.",
	Title:          "Title",
	Description:    "Description",
	Headings:       "Headings",
	LinkTexts:      "Texts of links to it",
	HTTPStatus:     "HTTP status",
	Fetched:        "Fetched",
	None:           "none",
	NothingIndexed: "No page of this host is indexed yet.",

	ErrorTitle:      "Cannot show this page",
	ErrMalformed:    "The address of this page is malformed.",
	ErrRepeated:     "Give %s only once.",
	ErrQueryMissing: "Type what to search for.",
	ErrQueryTooLong: "The search is too long: at most %d bytes.",
	ErrQueryNotText: "The search must be plain text.",
	ErrBadQuery:     "This search cannot be run.",
	ErrBadPage:      "The page number must be a whole number from 1 to %d.",
	ErrNoSuchPage:   "There is no page %[1]d; there are %[2]d.",
	ErrBadHost:      "That is not a host: give a DNS name or IPv4 address, without scheme or port.",
	ErrHostUnknown:  "Nothing of %s is indexed or to be crawled.",
	ErrNotFound:     "There is no such page.",
	ErrMethod:       "These pages can only be read (GET).",
	ErrUnavailable:  "The index is unavailable right now; try again in a moment.",
	ErrInternal:     "Something went wrong on our side.",
	BackToSearch:    "Back to the search",
}

var dutch = text{
	Language: i18n.Dutch,

	SearchTitle:  "Zoeken in de index van LohiSoft",
	NoPageText:   "De index bewaart geen paginatekst: elk resultaat leidt naar de oorspronkelijke pagina.",
	SearchLabel:  "Zoeken naar",
	SearchButton: "Zoeken",
	ResultCount:  "%d resultaten",
	PageOf:       "Pagina %[1]d van %[2]d",
	Previous:     "Vorige",
	Next:         "Volgende",
	Capped:       "Alleen de beste %d treffers worden getoond; voeg woorden toe om de zoekopdracht te verfijnen.",
	NoResults:    "Geen pagina komt overeen met %s.",
	NotALink:     "geen webadres, dus geen link",

	NavSearch:    "Zoeken",
	NavSites:     "Gecrawlde sites",
	NavBot:       "Over de bot",
	LanguageMenu: "Taal",

	SitesTitle:   "Gecrawlde sites",
	SitesIntro:   "Elke site in de index en elke site die de bot moet crawlen. Deze pagina toont de crawl alleen; niets hier verandert iets.",
	SitesCount:   "%d sites",
	SiteCol:      "Site",
	PagesCol:     "Geïndexeerde pagina's",
	LastCrawlCol: "Laatste crawl",
	NextCrawlCol: "Volgende crawl",
	StateCol:     "Status",
	PagesLink:    "pagina's",
	NotIndexed:   "nog niet geïndexeerd",
	Unchanged:    "%d ongewijzigd (304)",
	Received:     "%s ontvangen",
	NoTarget:     "geen CrawlTarget die de manager volgt",
	StateUnknown: "De status van de crawl is nu niet te lezen; alleen de index wordt getoond.",
	Suspended:    "gepauzeerd",
	Never:        "nooit",
	NoSites:      "Er is nog geen site geïndexeerd of te crawlen.",

	HostTitle:      "Pagina's van %s",
	HostIntro:      "Wat de index van elke pagina bewaart: niets meer.",
	Title:          "Titel",
	Description:    "Beschrijving",
	Headings:       "Koppen",
	LinkTexts:      "Teksten van links ernaartoe",
	HTTPStatus:     "HTTP-status",
	Fetched:        "Opgehaald",
	None:           "geen",
	NothingIndexed: "Nog geen pagina van deze host is geïndexeerd.",

	ErrorTitle:      "Deze pagina kan niet worden getoond",
	ErrMalformed:    "Het adres van deze pagina is misvormd.",
	ErrRepeated:     "Geef %s maar één keer op.",
	ErrQueryMissing: "Typ waarnaar u wilt zoeken.",
	ErrQueryTooLong: "De zoekopdracht is te lang: hoogstens %d bytes.",
	ErrQueryNotText: "De zoekopdracht moet gewone tekst zijn.",
	ErrBadQuery:     "Deze zoekopdracht kan niet worden uitgevoerd.",
	ErrBadPage:      "Het paginanummer moet een geheel getal van 1 tot %d zijn.",
	ErrNoSuchPage:   "Er is geen pagina %[1]d; er zijn er %[2]d.",
	ErrBadHost:      "Dat is geen host: geef een DNS-naam of IPv4-adres, zonder schema of poort.",
	ErrHostUnknown:  "Niets van %s is geïndexeerd of te crawlen.",
	ErrNotFound:     "Deze pagina bestaat niet.",
	ErrMethod:       "Deze pagina's kunnen alleen gelezen worden (GET).",
	ErrUnavailable:  "De index is nu niet bereikbaar; probeer het zo opnieuw.",
	ErrInternal:     "Er ging aan onze kant iets mis.",
	BackToSearch:    "Terug naar zoeken",
}

var slovak = text{
	Language: i18n.Slovak,

	SearchTitle:  "Vyhľadávanie v indexe LohiSoft",
	NoPageText:   "Index neuchováva text stránok: každý výsledok vedie na pôvodnú stránku.",
	SearchLabel:  "Hľadať",
	SearchButton: "Hľadať",
	ResultCount:  "Výsledky: %d",
	PageOf:       "Strana %[1]d z %[2]d",
	Previous:     "Predchádzajúca",
	Next:         "Ďalšia",
	Capped:       "Zobrazuje sa len %d najlepších zhôd; pridajte slová a spresnite hľadanie.",
	NoResults:    "Hľadaniu %s nezodpovedá žiadna stránka.",
	NotALink:     "nie je to webová adresa, preto nie je odkazom",

	NavSearch:    "Hľadať",
	NavSites:     "Prehľadané weby",
	NavBot:       "O robotovi",
	LanguageMenu: "Jazyk",

	SitesTitle:   "Prehľadané weby",
	SitesIntro:   "Každý web v indexe a každý web, ktorý má robot prehľadať. Táto stránka prehľadávanie len ukazuje; nič tu nič nemení.",
	SitesCount:   "Weby: %d",
	SiteCol:      "Web",
	PagesCol:     "Indexované stránky",
	LastCrawlCol: "Posledné prehľadanie",
	NextCrawlCol: "Ďalšie prehľadanie",
	StateCol:     "Stav",
	PagesLink:    "stránky",
	NotIndexed:   "zatiaľ neindexované",
	Unchanged:    "nezmenené: %d (304)",
	Received:     "prijaté: %s",
	NoTarget:     "žiadny CrawlTarget, ktorý manažér sleduje",
	StateUnknown: "Stav prehľadávania sa teraz nedá načítať; zobrazuje sa len index.",
	Suspended:    "pozastavené",
	Never:        "nikdy",
	NoSites:      "Zatiaľ nie je indexovaný ani naplánovaný žiadny web.",

	HostTitle:      "Stránky %s",
	HostIntro:      "Čo index z každej stránky uchováva: nič viac.",
	Title:          "Názov",
	Description:    "Popis",
	Headings:       "Nadpisy",
	LinkTexts:      "Texty odkazov na ňu",
	HTTPStatus:     "Stav HTTP",
	Fetched:        "Stiahnuté",
	None:           "žiadne",
	NothingIndexed: "Z tohto hostiteľa zatiaľ nie je indexovaná žiadna stránka.",

	ErrorTitle:      "Túto stránku nemožno zobraziť",
	ErrMalformed:    "Adresa tejto stránky je poškodená.",
	ErrRepeated:     "Zadajte %s iba raz.",
	ErrQueryMissing: "Napíšte, čo chcete hľadať.",
	ErrQueryTooLong: "Hľadaný výraz je príliš dlhý: najviac %d bajtov.",
	ErrQueryNotText: "Hľadaný výraz musí byť obyčajný text.",
	ErrBadQuery:     "Toto hľadanie sa nedá vykonať.",
	ErrBadPage:      "Číslo strany musí byť celé číslo od 1 do %d.",
	ErrNoSuchPage:   "Strana %[1]d neexistuje; strán je %[2]d.",
	ErrBadHost:      "To nie je hostiteľ: zadajte názov DNS alebo adresu IPv4, bez schémy a portu.",
	ErrHostUnknown:  "Z %s nie je nič indexované ani naplánované.",
	ErrNotFound:     "Taká stránka neexistuje.",
	ErrMethod:       "Tieto stránky sa dajú iba čítať (GET).",
	ErrUnavailable:  "Index je momentálne nedostupný; skúste to o chvíľu.",
	ErrInternal:     "Na našej strane sa niečo pokazilo.",
	BackToSearch:    "Späť na vyhľadávanie",
}

var bulgarian = text{
	Language: i18n.Bulgarian,

	SearchTitle:  "Търсене в индекса на LohiSoft",
	NoPageText:   "Индексът не пази текста на страниците: всеки резултат води към оригиналната страница.",
	SearchLabel:  "Търсене на",
	SearchButton: "Търсене",
	ResultCount:  "Резултати: %d",
	PageOf:       "Страница %[1]d от %[2]d",
	Previous:     "Предишна",
	Next:         "Следваща",
	Capped:       "Показани са само най-добрите %d съвпадения; добавете думи, за да стесните търсенето.",
	NoResults:    "Няма страница, която да отговаря на %s.",
	NotALink:     "не е уеб адрес, затова не е връзка",

	NavSearch:    "Търсене",
	NavSites:     "Обходени сайтове",
	NavBot:       "За бота",
	LanguageMenu: "Език",

	SitesTitle:   "Обходени сайтове",
	SitesIntro:   "Всеки сайт в индекса и всеки сайт, който ботът трябва да обходи. Тази страница само показва обхождането; нищо тук не го променя.",
	SitesCount:   "Сайтове: %d",
	SiteCol:      "Сайт",
	PagesCol:     "Индексирани страници",
	LastCrawlCol: "Последно обхождане",
	NextCrawlCol: "Следващо обхождане",
	StateCol:     "Състояние",
	PagesLink:    "страници",
	NotIndexed:   "още не е индексиран",
	Unchanged:    "непроменени: %d (304)",
	Received:     "получени: %s",
	NoTarget:     "няма CrawlTarget, който мениджърът следи",
	StateUnknown: "Състоянието на обхождането не може да се прочете в момента; показан е само индексът.",
	Suspended:    "спрян",
	Never:        "никога",
	NoSites:      "Още няма индексиран сайт или сайт за обхождане.",

	HostTitle:      "Страници на %s",
	HostIntro:      "Какво пази индексът от всяка страница: нищо повече.",
	Title:          "Заглавие",
	Description:    "Описание",
	Headings:       "Заглавия на раздели",
	LinkTexts:      "Текстове на връзки към нея",
	HTTPStatus:     "HTTP статус",
	Fetched:        "Изтеглена",
	None:           "няма",
	NothingIndexed: "Още няма индексирана страница от този хост.",

	ErrorTitle:      "Тази страница не може да бъде показана",
	ErrMalformed:    "Адресът на тази страница е повреден.",
	ErrRepeated:     "Задайте %s само веднъж.",
	ErrQueryMissing: "Напишете какво търсите.",
	ErrQueryTooLong: "Търсенето е твърде дълго: най-много %d байта.",
	ErrQueryNotText: "Търсенето трябва да е обикновен текст.",
	ErrBadQuery:     "Това търсене не може да бъде изпълнено.",
	ErrBadPage:      "Номерът на страницата трябва да е цяло число от 1 до %d.",
	ErrNoSuchPage:   "Няма страница %[1]d; страниците са %[2]d.",
	ErrBadHost:      "Това не е хост: задайте DNS име или IPv4 адрес, без схема и порт.",
	ErrHostUnknown:  "Нищо от %s не е индексирано или за обхождане.",
	ErrNotFound:     "Няма такава страница.",
	ErrMethod:       "Тези страници могат само да се четат (GET).",
	ErrUnavailable:  "Индексът е недостъпен в момента; опитайте отново след малко.",
	ErrInternal:     "Нещо се обърка от наша страна.",
	BackToSearch:    "Обратно към търсенето",
}

var italian = text{
	Language: i18n.Italian,

	SearchTitle:  "Cerca nell'indice di LohiSoft",
	NoPageText:   "L'indice non conserva il testo delle pagine: ogni risultato porta alla pagina originale.",
	SearchLabel:  "Cerca",
	SearchButton: "Cerca",
	ResultCount:  "%d risultati",
	PageOf:       "Pagina %[1]d di %[2]d",
	Previous:     "Precedente",
	Next:         "Successiva",
	Capped:       "Sono mostrati solo i %d risultati migliori; aggiungi parole per restringere la ricerca.",
	NoResults:    "Nessuna pagina corrisponde a %s.",
	NotALink:     "non è un indirizzo web, quindi non è un link",

	NavSearch:    "Cerca",
	NavSites:     "Siti scansionati",
	NavBot:       "Informazioni sul bot",
	LanguageMenu: "Lingua",

	SitesTitle:   "Siti scansionati",
	SitesIntro:   "Ogni sito nell'indice e ogni sito che il bot deve scansionare. Questa pagina mostra soltanto la scansione; qui nulla la modifica.",
	SitesCount:   "%d siti",
	SiteCol:      "Sito",
	PagesCol:     "Pagine indicizzate",
	LastCrawlCol: "Ultima scansione",
	NextCrawlCol: "Prossima scansione",
	StateCol:     "Stato",
	PagesLink:    "pagine",
	NotIndexed:   "non ancora indicizzato",
	Unchanged:    "%d invariate (304)",
	Received:     "%s ricevuti",
	NoTarget:     "nessun CrawlTarget seguito dal manager",
	StateUnknown: "Lo stato della scansione non è leggibile ora; è mostrato solo l'indice.",
	Suspended:    "sospeso",
	Never:        "mai",
	NoSites:      "Nessun sito è ancora indicizzato o da scansionare.",

	HostTitle:      "Pagine di %s",
	HostIntro:      "Ciò che l'indice conserva di ogni pagina: nient'altro.",
	Title:          "Titolo",
	Description:    "Descrizione",
	Headings:       "Intestazioni",
	LinkTexts:      "Testi dei link che vi puntano",
	HTTPStatus:     "Stato HTTP",
	Fetched:        "Scaricata",
	None:           "nessuno",
	NothingIndexed: "Nessuna pagina di questo host è ancora indicizzata.",

	ErrorTitle:      "Impossibile mostrare questa pagina",
	ErrMalformed:    "L'indirizzo di questa pagina non è valido.",
	ErrRepeated:     "Indica %s una sola volta.",
	ErrQueryMissing: "Scrivi che cosa cercare.",
	ErrQueryTooLong: "La ricerca è troppo lunga: al massimo %d byte.",
	ErrQueryNotText: "La ricerca deve essere testo semplice.",
	ErrBadQuery:     "Questa ricerca non può essere eseguita.",
	ErrBadPage:      "Il numero di pagina deve essere un numero intero da 1 a %d.",
	ErrNoSuchPage:   "Non esiste la pagina %[1]d; le pagine sono %[2]d.",
	ErrBadHost:      "Questo non è un host: indica un nome DNS o un indirizzo IPv4, senza schema né porta.",
	ErrHostUnknown:  "Niente di %s è indicizzato o da scansionare.",
	ErrNotFound:     "Questa pagina non esiste.",
	ErrMethod:       "Queste pagine si possono solo leggere (GET).",
	ErrUnavailable:  "L'indice non è raggiungibile ora; riprova tra un momento.",
	ErrInternal:     "Qualcosa è andato storto da parte nostra.",
	BackToSearch:    "Torna alla ricerca",
}

// languages in the order of i18n.Languages.
var languages = []*text{&english, &dutch, &slovak, &bulgarian, &italian}
