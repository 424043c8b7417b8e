/**
 * Passwords refused by `--enable-strong-password` because attackers try them
 * first (ASVS v5 6.2.4). Compared case-insensitively. Only entries of at least
 * 6 characters matter, since shorter ones fail the length rule anyway.
 */
const LIST = `
123456 1234567 12345678 123456789 1234567890 12345678910 0123456789 987654321 9876543210
111111 1111111 11111111 000000 00000000 121212 123123 123123123 112233 666666 654321 7777777 88888888 555555 999999
123321 147258369 159753 123qwe 1q2w3e 1q2w3e4r 1q2w3e4r5t 1qaz2wsx 1qazxsw2 zaq12wsx qazwsx qwerty qwerty1 qwerty12
qwerty123 qwertyuiop qwer1234 asdfgh asdfghjk asdfghjkl zxcvbnm zxcvbn asdf1234 abc123 abcd1234 abcdef abcdefg
abcdefgh password password1 password12 password123 password1234 passw0rd p@ssw0rd p@ssword pa$$word passwort
motdepasse contraseña senha123 iloveyou iloveyou1 princess sunshine sunshine1 football football1 baseball
basketball soccer hockey monkey monkey123 dragon dragon123 master master123 letmein letmein1 welcome welcome1
welcome123 shadow superman batman trustno1 whatever freedom jennifer michael michelle jessica ashley charlie
charlie1 daniel thomas jordan23 hunter hunter2 ranger buster tigger summer winter spring autumn starwars
pokemon computer internet killer cheese cookie chocolate flower lovely loveme love123 secret secret123 access
admin admin123 administrator root toor changeme default guest login test1234 testtest test123 demo123
qwerty1234 q1w2e3r4 q1w2e3r4t5 azerty azerty123 aaaaaa aaaaaaaa zzzzzz abcabc 1password samsung apple123
google myspace1 linkedin facebook twitter youtube mustang harley ferrari corvette mercedes porsche
peanut pepper ginger maggie buddy bailey jasmine liverpool chelsea arsenal barcelona madrid matrix
nicole anthony andrew joshua robert matthew hannah amanda justin 696969 131313 232323 159357 147852
121314 0987654321 01234567 11223344 12341234 123654 1234qwer qweasd qweasdzxc zaq1xsw2 asd123 zxc123
mypassword newpassword oldpassword password! password01 passpass iloveu loveyou babygirl angel1 angels
computer1 spiderman superstar rockstar flower123 sunflower butterfly blink182 metallica nirvana
`;

/** Lower-cased common passwords. */
export const COMMON_PASSWORDS: ReadonlySet<string> = new Set(LIST.split(/\s+/).filter((w) => w.length > 0).map((w) => w.toLowerCase()));
