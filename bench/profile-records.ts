/**
 * The benches' deterministic profile records: the i-th record is the same on every run, about
 * five positions and two education entries each (~8 rows once loaded), generated one at a time
 * so a bench's memory does not grow with N.
 */
const TITLES = [
  'Software Engineer',
  'Senior Engineer',
  'Data Scientist',
  'Product Manager',
  'Designer',
  'Engineering Manager',
  'Analyst',
  'Consultant',
];
const COMPANIES = [
  'Acme',
  'Initech',
  'Globex',
  'Umbrella',
  'Hooli',
  'Stark Industries',
  'Wayne Enterprises',
  'Soylent',
];
// Built once: a regex replace per position was ~15% of the generator's time.
const COMPANY_URLS = new Map(
  COMPANIES.map((c) => [c, `https://network.example/company/${c.toLowerCase().replace(/ /g, '-')}`]),
);
const CITIES = [
  ['Lyon', 'ARA', 'FR'],
  ['Berlin', 'BE', 'DE'],
  ['Austin', 'TX', 'US'],
  ['Toronto', 'ON', 'CA'],
  ['Pune', 'MH', 'IN'],
] as const;
const SCHOOLS = ['INSA Lyon', 'TU Berlin', 'UT Austin', 'University of Toronto', 'IIT Bombay'];
const SKILLS = [
  'typescript',
  'sql',
  'python',
  'go',
  'kubernetes',
  'react',
  'postgres',
  'duckdb',
  'leadership',
  'figma',
];

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** The i-th profile record (same i, same record). */
export function profileRecord(i: number): Record<string, unknown> {
  const r = rng(i * 7919 + 17);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
  const city = pick(CITIES);
  const positionCount = 3 + Math.floor(r() * 5); // 3..7, mean 5
  const positions = Array.from({ length: positionCount }, (_, p) => {
    const company = pick(COMPANIES);
    const start = 2024 - (p + 1) * 2 - Math.floor(r() * 2);
    return {
      title: pick(TITLES),
      company,
      company_url: COMPANY_URLS.get(company)!,
      network_id: String(100000 + Math.floor(r() * 900000)),
      position_id: String(i * 10 + p),
      started_at: `${start}-0${1 + Math.floor(r() * 9)}`,
      ended_at: p === 0 ? null : `${start + 2}-0${1 + Math.floor(r() * 9)}`,
      description: `Worked on ${pick(SKILLS)} and ${pick(SKILLS)} at ${company}; shipped things "that mattered".`,
      skills: [pick(SKILLS), pick(SKILLS)],
      company_industry: 'Software',
      company_headcount: 50 + Math.floor(r() * 10000),
    };
  });
  const education = Array.from({ length: 2 }, (_, e) => ({
    school: pick(SCHOOLS),
    degree: e === 0 ? 'MSc' : 'BSc',
    field: 'Computer Science',
    education_id: String(i * 10 + e),
  }));
  const current = positions[0]!;
  return {
    url: `https://network.example/in/person-${i}`,
    public_identifier: `person-${i}`,
    urn: 5_000_000 + i,
    full_name: `Person ${i}`,
    headline: `${current.title} at ${current.company}`,
    location: { city: city[0], region: city[1], country: city[2] },
    current_company: {
      name: current.company,
      url: current.company_url,
      title: current.title,
      industry: 'Software',
      headcount: current.company_headcount,
    },
    positions,
    education,
    skills: [pick(SKILLS), pick(SKILLS), pick(SKILLS)],
    languages: ['English'],
    connections_count: Math.floor(r() * 5000),
    followers_count: Math.floor(r() * 20000),
    scraped_at: new Date(Date.UTC(2024, 4, 1) + i * 1000).toISOString(),
    locale: 'en_US',
  };
}
