"""Moodle's strings, in the languages of its lang packs, that a team assignment's grading worksheet is
written with: where `autograder.lms.groups` finds a worksheet's group and name columns and what its
group column says of a student in no group or in several, and where `autograder.lms.roster.names` finds
any grading worksheet's name column (`FULL_NAME`: the same header with or without teams).

mod/assign/gradingtable.php's download names the group column `get_string('submissionteam', 'assign')`
and the name column `get_string('fullname')`, and its `col_team` writes the member's group's name, or
`defaultteam` (a student in no group, where the assignment lets one hand in without a group),
`noteamgrader` (in no group, where it does not) or `multipleteamsgrader` (in several groups, where it
does not), all in the site's language. `defaultteam` also names the folder of Moodle's download of a
team assignment that holds the submission of the students in no group (`autograder.lms.downloads`,
`DEFAULT_GROUP`). The strings below are copied from the lang packs as download.moodle.org distributes
them (assign.php, and moodle.php for `fullname`), mirrored in projectestac/moodle-langpacks (updated
2026-06-18, commit 6340d351): every language that mirror holds. They are compared as they are
(French's have a no-break space, `\u00a0`, before the semicolon). A site whose administrator changed one
of these strings (Language customisation), or a pack of another language, is not recognised.
"""

from __future__ import annotations

from typing import NamedTuple


class TeamStrings(NamedTuple):
    """One language's strings of a team worksheet."""
    group: str            # submissionteam: the group column's header
    full_name: str        # fullname (core): the member's name column's header
    default_group: str    # defaultteam: in no group, handing in without one allowed
    no_group: str         # noteamgrader: in no group, handing in without one not allowed
    several_groups: str   # multipleteamsgrader: in several groups


TEAM = {
    "ar": TeamStrings("المجموعة", "ًالاسم كاملا", "المجموعة الأساسية",
                      "لست عضواً في أي مجموعة، لذلك يتعذر تقديم تسليمات.",
                      "عضو في أكثر من مجموعة، لذلك يتعذر تقديم تسليمات."),
    "ca": TeamStrings("Grup", "Nom complet", "Grup per defecte",
                      "No sou membre de cap grup, per això no teniu els permisos per fer trameses.",
                      "Sou membre de més d'un grup, per això no teniu els permisos per fer trameses."),
    "de": TeamStrings("Gruppe", "Vollständiger Name", "Standard-Gruppe",
                      "Kein Mitglied einer Gruppe. Die Abgabe von Aufgaben ist nicht möglich.",
                      "Mitglied in mehreren Gruppen. Die Abgabe von Aufgaben ist nicht möglich."),
    "el": TeamStrings("Ομάδα", "Πλήρες όνομα", "Προεπιλεγμένη ομάδα",
                      "Δεν είστε μέλος κάποιας ομάδας, οπότε δεν είστε σε θέση να υποβάλετε εργασίες.",
                      "Μέλος περισσότερων από μία ομάδων, οπότε δεν είναι σε θέση να υποβάλει εργασίες."),
    "en": TeamStrings("Group", "Full name", "Default group",
                      "Not a member of any group, so unable to make submissions.",
                      "Member of more than one group, so unable to make submissions."),
    "es": TeamStrings("Grupo", "Nombre completo", "Grupo predeterminado",
                      "No perteneces a ningún grupo, por lo que no es posible realizar entregas.",
                      "Miembro de más de un grupo, por lo que no puede añadir entregas."),
    "eu": TeamStrings("Taldea", "Izen osoa", "Talde lehenetsia",
                      "Talderik gabeko kidea, ezin du bidalketarik egin.",
                      "Talde anitzeko kidea, ezin du bidalketarik egin."),
    "fr": TeamStrings("Groupe", "Nom complet", "Groupe par défaut",
                      "Membre d’aucun groupe\u00a0; impossible donc de remettre un travail.",
                      "Membre de plusieurs groupes\u00a0; impossible donc de remettre un travail."),
    "gl": TeamStrings("Grupo", "Nome completo", "Grupo predeterminado",
                      "Non é membro de ningún grupo, po lo que non pode facer entregas.",
                      "Membro de máis dun grupo, po lo que non pode facer entregas."),
    "it": TeamStrings("Gruppo", "Nome", "Gruppo di default",
                      "Non appartieni a nessun gruppo, non puoi effettuare consegne",
                      "Appartieni a più gruppi, non puoi effettuare consegne"),
    "ja": TeamStrings("グループ", "フルネーム", "デフォルトグループ",
                      "どのグループのメンバでもないため提出することはできません。",
                      "2つ以上のグループのメンバのため、提出することはできません。"),
    "ko": TeamStrings("그룹", "전체 이름", "기본 모둠",
                      "어떤 그룹에도 등록되지 않아 제출물을 만들 수 없습니다.",
                      "여러 그룹에 등록되어 있어 제출물을 만들 수 없습니다."),
    "lt": TeamStrings("Grupė", "Visas pavadinimas", "Numatyta grupė",
                      "Nepriklausote reikiamai grupei, todėl negalite pateikti darbų.",
                      "Daugiau nei vienos grupės narys, todėl negali pateikti pateikimų."),
    "nl": TeamStrings("Groep", "Volledige naam", "Standaard groep",
                      "Lid van geen enkele groep, dus kan geen inzendingen doen.",
                      "Lid van meer dan één groep, dus kan geen inzendingen doen."),
    "pt": TeamStrings("Grupo", "Nome completo", "Grupo predefinido",
                      "Não pode submeter trabalhos porque não está inscrito em nenhum grupo.",
                      "Não pode fazer submissões deste trabalho porque está inscrito em mais do que um grupo."),
    "ro": TeamStrings("Grup", "Nume complet", "Grup implicit",
                      "Nu este membru al niciunui grup, deci nu poate trimite răspunsuri.",
                      "Membru al mai multor grupuri, deci se pot trimite răspunsuri."),
    "ru": TeamStrings("Группы", "Полное имя", "Группа по умолчанию",
                      "Не является членом какой-либо группы, поэтому не может отправлять ответы на задание.",
                      "Член нескольких групп, поэтому не может отправлять ответы на задание."),
    "sv": TeamStrings("Grupp", "Fullständigt namn", "Standardgrupp",
                      "Inte medlem i någon grupp, kan därför inte ladda upp fil",
                      "Medlem av mer än en grupp, kan därför inte ladda upp fil"),
    "tr": TeamStrings("Grup", "Tam adı", "Varsayılan grup",
                      "Herhangi bir grubun üyesi değil, bu nedenle gönderim yapamıyor.",
                      "Birden fazla grubun üyesi, bu nedenle gönderim yapamıyor."),
    "uk": TeamStrings("Група", "Повна назва", "Типова група",
                      "Не є учасником жодної групи, тому здати завдання не можна.",
                      "Є учасником більше ніж однієї групи, тому не може відправляти відповіді на завдання."),
    "ur": TeamStrings("گروپ", "پورا نام", "پہلے سے طے شدہ گروپ",
                      "کسی گروپ کا ممبر نہیں، اس لیے گذارشات کرنے سے قاصر ہوں۔",
                      "ایک سے زیادہ گروپ کے ممبر، اس لیے گذارشات کرنے سے قاصر ہیں۔"),
    "zh_cn": TeamStrings("小组", "全名", "默认小组",
                         "您不是任何小组的成员 ，因此无法提交作业。",
                         "您同时属于多个小组的成员，因此无法提交作业。"),
}

GROUP = {strings.group for strings in TEAM.values()}
FULL_NAME = {strings.full_name for strings in TEAM.values()}
DEFAULT_GROUP = {strings.default_group for strings in TEAM.values()}
NO_GROUP = {value for strings in TEAM.values() for value in (strings.default_group, strings.no_group)}
SEVERAL_GROUPS = {strings.several_groups for strings in TEAM.values()}
